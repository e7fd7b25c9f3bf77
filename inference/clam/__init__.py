"""CLAM's LLM client (``llm``): the critic and perceiver run by a model."""
