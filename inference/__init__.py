"""Local model back-ends: embeddings, NER for the PII cascade, OpenAI-compatible LLM clients.

Model adapters that apply governance's rules: imports contracts and governance only (docs/architecture.md,
"Imports"; lint-imports checks it), and governance never imports inference.
"""
