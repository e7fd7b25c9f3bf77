"""Local stack: Apache Kafka (KRaft, single node) and embedded PostgreSQL with pgvector."""
