"""Local model back-ends: embeddings, NER for the PII cascade, OpenAI-compatible LLM clients.

Imports only contracts and the value types of governance.pii (NerSpan, ImplicitVerdict).
"""
