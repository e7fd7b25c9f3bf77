"""The voices' prior through the real pipeline: the embedder gives each vector its voice, the read model keeps it,
and a question about the user's life ranks what the user told above what the user asked and above the
assistant's replies, while a question about what the assistant said ranks them as they are; full text on a
question about the user reads the user's own words only."""

from __future__ import annotations

import uuid

import pytest

from hivemem.stack import Stack
from producers.memory_client import MemoryClient
from tests.integration.kmms_support import SEED_RULES, memory, search_in_process
from tests.integration.support import owner_db

pytestmark = pytest.mark.integration

ASKED = "If I ever get to Kyoto, what are the must-sees?"
TOLD = "I saw Portishead live on Friday, what a show."
# Long enough that the round is cut in pieces: the later ones hold the assistant's words only ("reply").
REPLY = "\n".join(
    [
        "Kyoto rewards slow walking, so plan fewer things per day than you think.",
        "Start early at Fushimi Inari, before the tour groups, and walk at least to the Yotsutsuji intersection.",
        "Spend an afternoon in Higashiyama: Kiyomizu-dera, then the lanes of Sannenzaka and Ninenzaka down to Gion.",
        "Arashiyama deserves a morning: the bamboo grove at opening time, Tenryu-ji's garden, then the river walk.",
        "Kinkaku-ji is busy but worth it; pair it with Ryoan-ji's rock garden, a short bus ride away.",
        "For food, Nishiki Market at lunchtime, and a kaiseki dinner if the budget allows one splurge.",
        "In the evening, Pontocho alley along the river is lovely for a drink, and Gion at dusk for the old streets.",
        "A day trip to Nara is easy by train: the deer park, Todai-ji and its great Buddha.",
        "Buy an IC card for buses and trains, and check the seasonal opening hours of the temples before you go.",
        "If you have a spare evening, the Philosopher's Path is quiet after sunset and ends near Ginkaku-ji.",
        "Stay somewhere near Kyoto Station or Shijo for easy connections; ryokan in Higashiyama are pricier.",
        "Spring and autumn are the busiest seasons, so book popular restaurants and tea ceremonies well ahead.",
        "Finally, leave a free half day: the best moments there are often the ones nobody planned.",
    ]
)


CLAW = f"voices-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def mem(stack: Stack) -> MemoryClient:
    m = memory(stack, "mem-a", claw=CLAW, user_id="ana")
    sessions = {
        "asked": [{"role": "user", "content": ASKED}, {"role": "assistant", "content": "Happy to help you plan."}],
        "told": [{"role": "user", "content": TOLD}, {"role": "assistant", "content": "Sounds like a great night!"}],
        "planned": [{"role": "user", "content": "We are off to Kyoto in April: can you sketch two days for us?"},
                    {"role": "assistant", "content": REPLY}],
    }  # fmt: skip
    ids = [m.add(turns, session_id=sid, occurred_at=f"2026-05-0{i + 1}T10:00:00Z").episode_id
           for i, (sid, turns) in enumerate(sessions.items())]  # fmt: skip
    m.wait_indexed(ids, timeout_s=120)
    return m


def _sessions(stack: Stack, query: str, mode: str = "hybrid") -> list[tuple[str, float]]:
    """The sessions (and similarities) of ``query`` with the voices on (an opt-in rule: docs/kmms.md)."""
    res = search_in_process(stack, CLAW, "ana", query, 5, "2026-06-01T00:00:00Z", rules=SEED_RULES, mode=mode,
                            tenant="mem-a")  # fmt: skip
    return [(h.session_id or "", h.similarity) for h in res.hits]


def test_each_vector_carries_its_voice(mem: MemoryClient, stack: Stack) -> None:
    with owner_db(stack) as conn:
        rows = conn.execute(
            "SELECT e.session_id, v.voice, count(*) FROM kmms.kmms_vectors v JOIN kmms.kmms_units u ON u.tenant = "
            "v.tenant AND u.unit_id = regexp_replace(v.unit_id, '~s[0-9]+$', '') JOIN kmms.kmms_episodes e ON "
            "e.tenant = u.tenant AND e.episode_id = u.episode_id WHERE v.tenant = 'mem-a' AND v.claw_id = %s "
            "AND v.kind <> 'node' GROUP BY 1, 2", (CLAW,)).fetchall()  # fmt: skip
    voices = {(str(s), str(v)): int(str(n)) for s, v, n in rows}
    assert voices[("asked", "asked")] == 1 and voices[("told", "told")] == 1 and voices[("planned", "asked")] == 1
    assert voices.get(("planned", "reply"), 0) >= 1  # the pieces of the reply (no sentence vectors of their own)
    assert set(voices) == {("asked", "asked"), ("told", "told"), ("planned", "asked"), ("planned", "reply")}


def test_what_the_user_told_ranks_above_what_the_user_asked(mem: MemoryClient, stack: Stack) -> None:
    hits = _sessions(stack, "Which concerts have I been to recently?", mode="vector")
    assert [s for s, _ in hits][:1] == ["told"], hits
    sim = dict(hits)
    # By the plain cosine (what a hit reports) the question is closer: the prior, not the model, put it first.
    assert sim["asked"] > sim["told"], hits


def test_a_question_about_what_the_assistant_said_reads_the_replies(mem: MemoryClient, stack: Stack) -> None:
    assert [s for s, _ in _sessions(stack, "Which temples did you recommend for our Kyoto trip?")][:1] == ["planned"]
    # Full text: the reply's words answer a question about what the assistant said, not one about the user.
    assert "planned" in [s for s, _ in _sessions(stack, "Did you mention Pontocho alley?", mode="text")]
    assert "planned" not in [s for s, _ in _sessions(stack, "Have I been to Pontocho alley?", mode="text")]
