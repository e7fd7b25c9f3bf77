"""KMMS's model adapters: enrichment of episodes (``enrich``, ``local``, ``patterns``,
``dates``), its LLM (``llm``), the consolidator's back-ends (``consolidator``, ``backends``)."""
