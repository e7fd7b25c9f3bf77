"""Every knob of the KMMS search (docs/kmms.md, "Retrieval" and "Settings"), as one typed value passed down from the
API's wiring: read from the environment once, in ``hivemem.settings.search_config_from_env``, never at import.

``DEFAULT`` is the search with no ``HIVEMEM_KMMS_*`` variable set; every value was chosen on a public corpus and
reported on others (docs/kmms.md, "How the ranking was chosen"). The rules written from our own synthetic corpus
that public data did not support (voices, feedback, the statement form, recency, newest first within a topic, the
drill from facts to episodes, a window's margin, a change named by its value) were removed on 2026-12-05; their
measurements stay in docs/kmms.md. A test or bench that changes a knob builds its own
(``dataclasses.replace(DEFAULT, text_weight=2.0)``) and passes it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SearchConfig:
    # The first stage's fusion: reciprocal rank with constant ``rrf_k``, full text weighted ``text_weight`` against
    # the vectors' 1 (HIVEMEM_KMMS_TEXT_WEIGHT, HIVEMEM_KMMS_RRF_K). Chosen on LoCoMo's 1,532 questions: text 2 :
    # vector 1, k = 10 gave session recall@5 0.855 with the other rules off (the seed's k = 60 and weight 0.25:
    # 0.714); 1 : 1 since the question's vector leaves out the speakers' names (``speaker_names``), which made the
    # vectors' ranking better: 0.874 against 0.867 with 2 : 1 through the API (docs/kmms.md).
    text_weight: float = 1.0
    rrf_k: int = 10
    # Episodes ranked by a learned score over both rankings instead of by their best unit's fused score
    # (HIVEMEM_KMMS_EPISODE_MODEL; 0: off; governance/kmms/episode_rank.py). Fitted on LoCoMo with the two
    # settings above at their defaults; hybrid searches only.
    episode_model: bool = True
    # The episode model also reads the first stage's best rounds against the question word by word, from the token
    # states the embedder kept (HIVEMEM_KMMS_LATE; 0: off; governance/kmms/late.py). A memory whose rounds have no
    # token states (embedded before 2026-12-05, or by a model that gives none) is ranked without it either way.
    late: bool = True
    # Full text ranks each unit with its neighbours in the episode, the unit before and after it
    # (HIVEMEM_KMMS_TEXT_NEIGHBOURS; 0: off): a window of three units, one BM25 document.
    text_neighbours: bool = True
    # The question's vector keeps the names of the memory's speakers (HIVEMEM_KMMS_SPEAKER_NAMES; default off: it is
    # computed without them, governance/kmms/speakers.py; full text reads them either way).
    speaker_names: bool = False
    # A time window of at least this many units is ranked in two halves side by side (HIVEMEM_KMMS_SPLIT_WINDOW).
    split_window: int = 4000
    # A large memory's full text leaves out the lexemes more than this share of its units hold
    # (HIVEMEM_KMMS_COMMON_LEXEME; 1: off).
    common_share: float = 0.01
    # A current fact and a later hit this similar: the later may have changed it (HIVEMEM_KMMS_FACT_TOPIC; > 1: off).
    fact_topic: float = 0.30
    # A question's time window: its rounds' ranking joins the ranking of all time as a reciprocal-rank list of this
    # weight (HIVEMEM_KMMS_WINDOW_WEIGHT; all time's: 1.0), so a round of the window gains and one outside it can
    # pass the window's weak rounds (the window's best still leads); 0: the window's rounds first, then the rest of
    # time's. Chosen on LoCoMo (session recall@5 0.8683 against 0.8676 with the window
    # first; weights 0.5 / 1 / 4: 0.8647 / 0.8670 / 0.8676).
    window_weight: float = 2.0
    # A question about a state in a past period (POINT_IN_TIME: "Where was James on July 12, 2022?") ranks its rounds
    # with that period's window too, as a WINDOW question does (HIVEMEM_KMMS_POINT_WINDOW; 0: off, the period then
    # only chooses the facts valid in it). On since 2026-11-29: LoCoMo's 37 such questions 0.685 -> 0.847 at
    # session recall@5 (chosen there), REALTALK's 10 0.75 -> 0.85 (@10 0.90 -> 1.00; docs/kmms.md).
    point_window: bool = True
    # Full text reads the whole question, its date phrases and present-tense markers too ("last weekend", "one year
    # ago", "now"); the vectors read it without them (HIVEMEM_KMMS_TEXT_DATES; 0: off, full text reads it as the
    # vectors do). On since 2026-12-02: a round that tells of a period often names it as the question does ("I
    # volunteered at a career fair last weekend"). LoCoMo (chosen on) 0.879 -> 0.884 at session recall@5, REALTALK
    # 0.822 -> 0.827; LongMemEval-S's three draws of 100: two questions of 283 lower (docs/kmms.md).
    text_dates: bool = True
    # A layer is sufficient from this similarity (HIVEMEM_KMMS_TAU); under this best similarity, nothing in memory
    # is about the question (HIVEMEM_KMMS_ABSTAIN). Calibrated in projections.kmms.queries (TAU, ABSTAIN_BELOW).
    # The seed's 0.75 since 2026-12-06 (0.40 before): the evidence answers `ask` better than a summary or a fact.
    # LoCoMo (chosen on; every second question, the gold answer's words `ask` holds, k = 5) 0.399 -> 0.498, REALTALK
    # 0.293 -> 0.318, LongMemEval-S's second draw 0.387 -> 0.395 (docs/kmms-measurements.md).
    tau: float = 0.75
    # A question about the present (temporal intent CURRENT: "where do I work now?") is answered by a current L2
    # fact from this similarity (HIVEMEM_KMMS_TAU_CURRENT; ``governance.kmms.sufficiency.threshold``): the fact
    # follows a change of value, the evidence's order does not. Kept for knowledge updates, not for a public gain:
    # at tau 0.75 it answers 1 / 3 / 0 of those questions, LoCoMo 0.4976 either way, REALTALK 0.3180 against 0.3191.
    tau_current: float = 0.40
    abstain_below: float = 0.30


DEFAULT = SearchConfig()
