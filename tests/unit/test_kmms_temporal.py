"""KMMS temporal intent (seed Table 2): kinds and exact closed ranges for a fixed question time,
2026-04-15T12:00Z (a Wednesday)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import hypothesis.strategies as st
import pytest
from hypothesis import given

from governance.kmms.temporal import Kind, TemporalIntent, parse_temporal

ASKED = datetime(2026, 4, 15, 12, tzinfo=UTC)
ASKED_MS = 1_776_254_400_000
assert int(ASKED.timestamp() * 1000) == ASKED_MS


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).replace(tzinfo=UTC).timestamp() * 1000)


def _day(d: str) -> tuple[int, int]:
    return _ms(d), _ms(d) + 86_400_000 - 1


def _span(start: str, end_exclusive: str) -> tuple[int, int]:
    return _ms(start), _ms(end_exclusive) - 1


NOW_END = ASKED_MS  # ranges running "to now" end at the question

CURRENT = [
    "Where do I live now?",
    "What am I currently reading?",
    "What do I prefer these days?",
    "Where does John work at the moment?",
    "Do I still live in Porto?",
    "Where do I live?",
    "What's the latest on the DuckDB migration?",
    "What is my most recent job?",
    "Where do I live today?",
]


@pytest.mark.parametrize("query", CURRENT)
def test_current(query: str) -> None:
    t = parse_temporal(query, ASKED_MS)
    assert (t.kind, t.start_ms, t.end_ms) == ("CURRENT", None, None)
    assert t.cues


@pytest.mark.parametrize(
    ("query", "start", "end", "cue"),
    [
        ("How has my diet changed?", None, None, "how has my diet changed"),
        ("History of my jobs", None, None, "history"),
        ("How did my view of Rust evolve over time?", None, None, "over time"),
        ("I used to like tea and now?", None, None, "used to like tea and now"),
        ("List all the places I lived", None, None, "all the places"),
        ("Timeline of the DuckDB migration", None, None, "timeline"),
        ("Before and after the move, what changed?", None, None, "before and after"),
        ("How has John's role changed since June?", _ms("2025-06-01"), NOW_END, "since june"),
    ],
)
def test_evolution(query: str, start: int | None, end: int | None, cue: str) -> None:
    t = parse_temporal(query, ASKED_MS)
    assert (t.kind, t.start_ms, t.end_ms) == ("EVOLUTION", start, end)
    assert cue in t.cues


WINDOWS: list[tuple[str, tuple[int | None, int | None]]] = [
    ("What did I do last week?", _span("2026-04-06", "2026-04-13")),  # calendar week, Monday start
    ("What did I buy in March?", _span("2026-03-01", "2026-04-01")),
    ("What did I buy in April?", _span("2026-04-01", "2026-05-01")),  # started before the question
    ("What did I buy in May?", _span("2025-05-01", "2025-06-01")),  # May 2026 has not started
    ("What did we discuss in March 2025?", _span("2025-03-01", "2025-04-01")),
    ("What did I say between May and July?", _span("2025-05-01", "2025-08-01")),
    ("What did I say between November and February?", _span("2025-11-01", "2026-03-01")),
    ("What did I do from March 2024 to June 2024?", _span("2024-03-01", "2024-07-01")),
    ("What happened yesterday?", _day("2026-04-14")),
    ("What did I do today?", _day("2026-04-15")),
    ("What did I read this month?", _span("2026-04-01", "2026-05-01")),
    ("What did I eat last month?", _span("2026-03-01", "2026-04-01")),
    ("What did I learn last year?", _span("2025-01-01", "2026-01-01")),
    ("What did I build in 2024?", _span("2024-01-01", "2025-01-01")),
    ("What did we ship in Q3?", _span("2025-07-01", "2025-10-01")),
    ("What did we ship in Q1?", _span("2026-01-01", "2026-04-01")),
    ("What did we ship in Q4 2024?", _span("2024-10-01", "2025-01-01")),
    ("What did I do during the summer?", _span("2025-06-01", "2025-09-01")),
    ("What did I do last winter?", _span("2025-12-01", "2026-03-01")),
    ("What did I write in the past 3 days?", (_ms("2026-04-12T12:00"), NOW_END)),
    ("What did John say in the last two weeks?", (_ms("2026-04-01T12:00"), NOW_END)),
    ("What did I do in the last week?", (_ms("2026-04-08T12:00"), NOW_END)),  # "the last week" rolls
    ("What did I spend over the past six months?", (_ms("2025-10-15T12:00"), NOW_END)),
    ("What have I done since June?", (_ms("2025-06-01"), NOW_END)),
    ("What did we decide earlier this year?", (_ms("2026-01-01"), NOW_END)),
    ("What did I do last Monday?", _day("2026-04-13")),
    ("What did I do on Friday?", _day("2026-04-10")),
    ("What did I say on Wednesday?", _day("2026-04-15")),  # today is the most recent Wednesday
    ("What did I say last Wednesday?", _day("2026-04-08")),
    ("What did I buy on 2025-06-01?", _day("2025-06-01")),
    ("What did I buy on 3 May 2025?", _day("2025-05-03")),
    ("What did I buy on May 3rd?", _day("2025-05-03")),
    ("What did I buy on the 14th of April?", _day("2026-04-14")),
    ("What did I buy on April 16?", _day("2025-04-16")),  # tomorrow's date: last year's
    ("What did I buy on Jan 5, 2026?", _day("2026-01-05")),
    ("What did I do 3 days ago?", _day("2026-04-12")),
    ("What did I do two weeks ago?", _span("2026-03-30", "2026-04-06")),
    ("What did I do before March 2025?", (None, _ms("2025-03-01") - 1)),
    ("What did I do after May 2025?", (_ms("2025-06-01"), None)),
    ("What was I doing last Friday?", _day("2026-04-10")),  # progressive of an activity: events
    ("Who stayed with me last weekend?", _span("2026-04-11", "2026-04-13")),  # a stay is a visit: an event
    ("Where we stayed in March, was it nice?", _span("2026-03-01", "2026-04-01")),
    # A part of a period: its weeks from its first day (or back from its last), its weekends Saturday and Sunday
    # (the last may end after it), its halves and thirds in whole months when whole months divide it.
    ("What did I do in the last week of March?", _span("2026-03-25", "2026-04-01")),
    ("What did I buy in the first two weeks of March 2025?", _span("2025-03-01", "2025-03-15")),
    ("What did I read in the second week of February?", _span("2026-02-08", "2026-02-15")),
    ("What did I do on the first weekend of March?", _span("2026-03-07", "2026-03-09")),  # March 1st: a Sunday
    ("What did I do on the last weekend of January 2026?", _span("2026-01-31", "2026-02-02")),
    ("What did I read in the last 3 days of March?", _span("2026-03-29", "2026-04-01")),
    ("What did we ship in the first half of 2025?", _span("2025-01-01", "2025-07-01")),
    ("What did I do in the second half of September 2025?", _span("2025-09-16", "2025-10-01")),
    ("What did I cook in early March?", _span("2026-03-01", "2026-03-11")),
    ("What did I cook in mid-March?", _span("2026-03-11", "2026-03-22")),
    ("What did I cook in late March?", _span("2026-03-22", "2026-04-01")),
    ("What happened towards the end of last summer?", _span("2025-08-01", "2025-09-01")),
    ("What did I plan in the beginning of 2025?", _span("2025-01-01", "2025-05-01")),
]


@pytest.mark.parametrize(("query", "span"), WINDOWS)
def test_window(query: str, span: tuple[int | None, int | None]) -> None:
    t = parse_temporal(query, ASKED_MS)
    assert (t.kind, t.start_ms, t.end_ms) == ("WINDOW", *span)


POINTS: list[tuple[str, tuple[int | None, int | None]]] = [
    ("Where did I live in March?", _span("2026-03-01", "2026-04-01")),
    ("Where did I work in 2024?", _span("2024-01-01", "2025-01-01")),
    ("What was my favourite editor in March?", _span("2026-03-01", "2026-04-01")),
    ("What laptop did I use last year?", _span("2025-01-01", "2026-01-01")),
    ("Where was I living in Q3 2025?", _span("2025-07-01", "2025-10-01")),
    ("What was my address as of 2025-06-01?", _day("2025-06-01")),
    ("Where did I live on 3 May?", _day("2025-05-03")),
    ("Where did I live at the start of 2025?", _day("2025-01-01")),
    ("Where did I live at the end of March?", _day("2026-03-31")),
    ("Who did I work for two years ago?", _span("2024-01-01", "2025-01-01")),
    ("Where was I living in the last two weeks of August 2025?", _span("2025-08-18", "2025-09-01")),
    ("What was I working on in the beginning of January 2026?", _span("2026-01-01", "2026-01-11")),
]


@pytest.mark.parametrize(("query", "span"), POINTS)
def test_point_in_time(query: str, span: tuple[int | None, int | None]) -> None:
    t = parse_temporal(query, ASKED_MS)
    assert (t.kind, t.start_ms, t.end_ms) == ("POINT_IN_TIME", *span)


def test_unresolvable_anchor() -> None:
    t = parse_temporal("Where did I live before I moved?", ASKED_MS)
    assert t == TemporalIntent("POINT_IN_TIME", None, None, ("before i moved", "did i live"), "i moved")
    t = parse_temporal("What did I buy before I moved?", ASKED_MS)
    assert (t.kind, t.start_ms, t.end_ms, t.anchor) == ("WINDOW", None, None, "i moved")
    t = parse_temporal("What has changed since my sister left?", ASKED_MS)
    assert (t.kind, t.start_ms, t.end_ms, t.anchor) == ("EVOLUTION", None, NOW_END, "my sister left")


@pytest.mark.parametrize(
    "query",
    [
        "Tell me about John",
        "What did John say exactly?",
        "May I ask what you know about DuckDB?",  # "may" the modal is not a month
        "Did we march on the capital?",
        "Summarize the design review",
        "",
    ],
)
def test_unspecified(query: str) -> None:
    assert parse_temporal(query, ASKED_MS) == TemporalIntent("UNSPECIFIED")


def test_cues_are_reported() -> None:
    t = parse_temporal("What did I say between May and July?", ASKED_MS)
    assert t.cues == ("between may and july", "did i say")
    assert parse_temporal("Where did I live in March?", ASKED_MS).cues == ("in march", "did i live")
    assert parse_temporal("Do I still work at Acme right now?", ASKED_MS).cues == ("still", "right now")


def test_timezone_shifts_calendar_periods() -> None:
    lisbon = ZoneInfo("Europe/Lisbon")  # UTC+1 in summer (WEST)
    t = parse_temporal("What did I do yesterday?", ASKED_MS, tz=lisbon)
    assert (t.start_ms, t.end_ms) == (_ms("2026-04-13T23:00"), _ms("2026-04-14T23:00") - 1)
    # a period spanning the DST change (29 March 2026) is 1h shorter
    t = parse_temporal("What did I do in March?", ASKED_MS, tz=lisbon)
    assert (t.start_ms, t.end_ms) == (_ms("2026-03-01T00:00"), _ms("2026-03-31T23:00") - 1)
    # late evening in Los Angeles is still the 14th there
    t = parse_temporal("What did I do today?", _ms("2026-04-15T03:00"), tz=ZoneInfo("America/Los_Angeles"))
    assert (t.start_ms, t.end_ms) == (_ms("2026-04-14T07:00"), _ms("2026-04-15T07:00") - 1)


def test_relative_dates_follow_the_question_time() -> None:
    jan = _ms("2026-01-10T09:00")  # a Saturday in January
    assert parse_temporal("What did I buy in March?", jan).start_ms == _ms("2025-03-01")
    assert parse_temporal("What did I do last month?", jan).start_ms == _ms("2025-12-01")
    assert parse_temporal("What did I do last week?", jan).start_ms == _ms("2025-12-29")
    assert parse_temporal("What did I do in Q1?", jan).start_ms == _ms("2026-01-01")
    assert parse_temporal("What did I do in the past month?", _ms("2026-03-31")).start_ms == _ms("2026-02-28")


@given(
    asked=st.integers(_ms("2000-01-01"), _ms("2090-01-01")),
    query=st.sampled_from([q for q, _ in WINDOWS + POINTS] + CURRENT),
)
def test_deterministic_and_ordered(asked: int, query: str) -> None:
    a, b = parse_temporal(query, asked), parse_temporal(query, asked)
    assert a == b
    kinds: tuple[Kind, ...] = ("CURRENT", "EVOLUTION", "WINDOW", "POINT_IN_TIME", "UNSPECIFIED")
    assert a.kind in kinds
    if a.start_ms is not None and a.end_ms is not None:
        assert a.start_ms <= a.end_ms


def test_weekends_resolve_to_saturday_and_sunday() -> None:
    from datetime import UTC, datetime

    def span(q: str, asked: datetime) -> tuple[str, str, str]:
        i = parse_temporal(q, int(asked.timestamp() * 1000))
        assert i.start_ms is not None and i.end_ms is not None
        day = lambda ms: datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")  # noqa: E731
        return i.kind, day(i.start_ms), day(i.end_ms)

    wednesday, sunday = datetime(2026, 4, 15, 12, tzinfo=UTC), datetime(2026, 4, 19, 12, tzinfo=UTC)
    assert span("what did I buy last weekend?", wednesday) == ("WINDOW", "2026-04-11", "2026-04-12")
    assert span("what did I buy last weekend?", sunday) == ("WINDOW", "2026-04-11", "2026-04-12")
    assert span("who visited me this weekend?", wednesday) == ("WINDOW", "2026-04-18", "2026-04-19")


@pytest.mark.parametrize(
    ("question", "searched"),
    [
        # the date phrase goes; the verb cue says what happened and stays (it was dropped once: "Who with me?")
        ("Who stayed with me last weekend?", "Who stayed with me ?"),
        ("What did I buy last weekend?", "What did I buy ?"),
        ("Where did I live in March?", "Where did I live ?"),
        ("Which company did I work at in June?", "Which company did I work at ?"),
        ("Where do I live now?", "Where do I live ?"),
        ("How many concerts have I gone to lately?", "How many concerts have I gone to lately?"),
    ],
)
def test_the_search_text_keeps_the_verb_and_drops_the_date(question: str, searched: str) -> None:
    from projections.kmms.queries import content_query

    intent = parse_temporal(question, ASKED_MS)
    assert intent.verb_cue is None or intent.verb_cue in intent.cues
    assert content_query(question, ASKED_MS) == searched


def test_a_question_is_read_once_for_its_intent_and_its_search_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API reads a question once (``read_question``) and hands it to the search with its vector: the intent and
    the text searched and embedded come from one parse of its dates."""
    from projections.kmms import queries

    calls: list[str] = []
    real = queries.parse_temporal

    def counted(query: str, at: int) -> TemporalIntent:
        calls.append(query)
        return real(query, at)

    monkeypatch.setattr(queries, "parse_temporal", counted)
    question = queries.read_question("What did I buy last weekend?", ASKED_MS)
    assert calls == ["What did I buy last weekend?"]
    assert question.intent == parse_temporal("What did I buy last weekend?", ASKED_MS)
    assert (question.intent.kind, question.text, question.as_of) == ("WINDOW", "What did I buy ?", ASKED_MS)


@pytest.mark.parametrize(
    ("question", "span"),
    [
        ("Which cities have I visited in the last few months?", _span("2026-01-15T12:00", "2026-04-15T12:00:00.001")),
        ("Where did I go in the past couple of weeks?", _span("2026-04-01T12:00", "2026-04-15T12:00:00.001")),
        ("What did I buy a few weeks ago?", _span("2026-03-23", "2026-03-30")),
    ],
)
def test_a_few_is_three_and_a_couple_is_two(question: str, span: tuple[int, int]) -> None:
    intent = parse_temporal(question, ASKED_MS)
    assert (intent.kind, intent.start_ms, intent.end_ms) == ("WINDOW", *span)
