"""The rules as pure functions and small state machines. No Kafka, no SQL, no models (never inference)."""
