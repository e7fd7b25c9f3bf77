"""Every knob of the KMMS search (docs/kmms.md, "Retrieval" and "Settings"), as one typed value passed down from the
API's wiring: read from the environment once, in ``hivemem.settings.search_config_from_env``, never at import.

``DEFAULT`` is the search with no ``HIVEMEM_KMMS_*`` variable set: the rules that public data did not support are
off (docs/kmms.md, "How the ranking was chosen"). A test or bench that turns one on builds its own
(``dataclasses.replace(DEFAULT, feedback_beta=0.5)``) and passes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from governance.kmms.voice import VoiceWeights


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
    # Full text ranks each unit with its neighbours in the episode, the unit before and after it
    # (HIVEMEM_KMMS_TEXT_NEIGHBOURS; 0: off): a window of three units, one BM25 document.
    text_neighbours: bool = True
    # The question's vector keeps the names of the memory's speakers (HIVEMEM_KMMS_SPEAKER_NAMES; default off: it is
    # computed without them, governance/kmms/speakers.py; full text reads them either way).
    speaker_names: bool = False
    # The voices' distance adjustments on a question about the user (HIVEMEM_KMMS_VOICE_ASKED/_TOLD/_REPLY; 0: off).
    voice: VoiceWeights = field(default_factory=lambda: VoiceWeights(asked=0.0, told=0.0, reply=0.0))
    # On a question about the user's life, full text ranks the words the user said only (HIVEMEM_KMMS_SAID_TEXT).
    said_text: bool = False
    # A time window of at least this many units is ranked in two halves side by side (HIVEMEM_KMMS_SPLIT_WINDOW).
    split_window: int = 4000
    # Pseudo-relevance feedback's beta (HIVEMEM_KMMS_FEEDBACK; 0: off).
    feedback_beta: float = 0.0
    # A large memory's full text leaves out the lexemes more than this share of its units hold
    # (HIVEMEM_KMMS_COMMON_LEXEME; 1: off).
    common_share: float = 0.01
    # A question about the present: the newest candidate gains this share of its score (HIVEMEM_KMMS_RECENCY; 0: off).
    recency: float = 0.0
    # Two hits this similar tell of the same thing, newest first (HIVEMEM_KMMS_SAME_TOPIC; > 1: off).
    same_topic: float = 2.0
    # A current fact and a later hit this similar: the later may have changed it (HIVEMEM_KMMS_FACT_TOPIC; > 1: off).
    fact_topic: float = 0.30
    # The facts at least this similar to the question are looked at for a later round naming their value with a
    # change word (HIVEMEM_KMMS_NAMED_CHANGE; > 1: off).
    change_similarity: float = 0.30
    # A round outside a question's time window this much more similar than the window's best comes first
    # (HIVEMEM_KMMS_WINDOW_MARGIN; > 1: off; 0.15 as written). Off since 2026-11-28: on LoCoMo's dated questions
    # ("What new hobby did James become interested in on 9 July, 2022?") it put rounds of other dates first.
    window_margin: float = 2.0
    # A question's time window: its rounds' ranking joins the ranking of all time as a reciprocal-rank list of this
    # weight (HIVEMEM_KMMS_WINDOW_WEIGHT; all time's: 1.0), so a round of the window gains and one outside it can
    # pass the window's weak rounds (the window's best still leads); 0: the window's rounds first, then the rest of
    # time's (``window_margin`` applies). Chosen on LoCoMo (session recall@5 0.8683 against 0.8676 with the window
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
    # A fact drills to its episodes when at least this similar to the question (HIVEMEM_KMMS_DRILL; > 1: off), its
    # episodes fused as a reciprocal-rank list of this weight (HIVEMEM_KMMS_DRILL_WEIGHT; the vectors': 1.0).
    drill_similarity: float = 2.0
    drill_weight: float = 1.0
    # A layer is sufficient from this similarity (HIVEMEM_KMMS_TAU); under this best similarity, nothing in memory
    # is about the question (HIVEMEM_KMMS_ABSTAIN). Calibrated in projections.kmms.queries (TAU, ABSTAIN_BELOW).
    tau: float = 0.40
    abstain_below: float = 0.30
    # The question's statement form's share of its search vector (HIVEMEM_KMMS_STATEMENT; 0: off).
    statement_weight: float = 0.0


DEFAULT = SearchConfig()
