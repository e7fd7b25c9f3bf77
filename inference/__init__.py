"""Local model back-ends: embeddings, NER, OpenAI-compatible LLM clients; imports only contracts."""
