"""KMMS, the per-claw hierarchical memory (seed 000 §1-§4): layers L0-L4, confidence, temporal
intents, sufficiency, strength decay, consolidation rules. Pure: no Kafka, no SQL, no models."""
