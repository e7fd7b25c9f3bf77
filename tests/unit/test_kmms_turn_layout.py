"""A conversation's turns as a layout over its rendered content (governance/transcripts.py): the read model keeps
the layout, a KSTAR export carries it, and an import gives the same turns back, so the same rounds are cut."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts.kmms_records import KmmsEpisode, KmmsTurn
from contracts.models import EpisodeTurn
from governance.kmms.units import units_of
from governance.kstar.bundle import BundleError
from governance.transcripts import render, turn_layout, turns_from_layout
from projections.kstar.io import episode_payload

# Texts as a chat holds them: several lines, colons, a line that looks like another speaker's.
_TEXT = st.text(st.sampled_from(list("ab :\nMelanie.user")), min_size=1, max_size=40).filter(lambda t: t.strip())
_TURN = st.builds(lambda role, content, name: EpisodeTurn(role=role, content=content, name=name),
                  st.sampled_from(["user", "assistant", "system", "tool"]), _TEXT,
                  st.sampled_from(["", "Melanie", "Caroline"]))  # fmt: skip


@given(st.lists(_TURN, min_size=1, max_size=8))
def test_the_layout_gives_the_same_turns_back(turns: list[EpisodeTurn]) -> None:
    content = render(turns, "")
    assert turns_from_layout(content, turn_layout(turns)) == turns


def test_the_layout_is_role_name_and_length() -> None:
    turns = [EpisodeTurn(role="user", content="I painted a lake.", name="Melanie"),
             EpisodeTurn(role="assistant", content="Lovely!")]  # fmt: skip
    assert turn_layout(turns) == [{"role": "user", "name": "Melanie", "chars": 17},
                                  {"role": "assistant", "name": "", "chars": 7}]  # fmt: skip


@pytest.mark.parametrize("layout", [
    [{"role": "user", "name": "", "chars": 5}],  # too short: content is left over
    [{"role": "user", "name": "Melanie", "chars": 30}],  # runs past the content
    [{"role": "assistant", "name": "", "chars": 26}],  # another role than the content's line
    [{"role": "user", "name": "", "chars": 0}, {"role": "user", "name": "", "chars": 26}],  # an empty turn
    [{"role": "user", "name": ""}],  # no length
    [{"role": "moderator", "name": "", "chars": 26}],  # no such role
    ["user"],  # not an object
])  # fmt: skip
def test_a_layout_that_does_not_fit_gives_no_turns(layout: list[object]) -> None:
    content = "user: Melanie: I painted a lake."
    assert turns_from_layout(content, layout) == []  # type: ignore[arg-type]


def test_no_layout_no_turns() -> None:
    assert turns_from_layout("a note", []) == []


def test_an_imported_conversation_is_cut_into_the_same_rounds() -> None:
    """Without its turns an imported chat was cut into paragraphs of up to 1,200 characters: 2 units, not 6 rounds."""
    turns = [KmmsTurn(role="user", content="words " * 40, name=who) for who in ["Melanie", "Caroline"] * 3]
    content = render(turns, "")
    stored = KmmsEpisode(episode_id="ep-1", session_id="s", thread_id="", content_type="CONVERSATION",
                         occurred_at=1, content=content, content_hash="h", turns=turns)  # fmt: skip
    exported = {"episode_id": "ep-1", "user_id": "alice", "content_type": "CONVERSATION", "occurred_at": 1,
                "content": content, "turn_layout": turn_layout(turns)}  # fmt: skip
    told = episode_payload(exported, "claw-2")
    again = stored.model_copy(update={"turns": [KmmsTurn(role=t.role, content=t.content, name=t.name)
                                                for t in told.turns]})  # fmt: skip
    assert [u.text for u in units_of(again)] == [u.text for u in units_of(stored)]
    assert len(units_of(again)) == 6
    without = stored.model_copy(update={"turns": []})
    assert len(units_of(without)) == 2


def test_an_import_refuses_a_layout_that_does_not_fit() -> None:
    bad = {"episode_id": "ep-1", "content": "user: hello", "occurred_at": 1,
           "turn_layout": [{"role": "user", "name": "", "chars": 99}]}  # fmt: skip
    with pytest.raises(BundleError) as err:
        episode_payload(bad, "claw-2")
    assert err.value.code == "BUNDLE_BAD_FORMAT" and "turn_layout" in str(err.value)
