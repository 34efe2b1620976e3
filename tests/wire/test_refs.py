"""Session references (wire/refs.py): an id, then an exact name, then a unique prefix
of an id, whichever names exactly one session; otherwise one line that says why and
lists the candidates."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.errors import BadReference
from ptyvisor.wire.protocol import SessionSummary
from ptyvisor.wire.refs import SHOWN_CANDIDATES, resolve


def session(ident: str, name: str) -> SessionSummary:
    """Only what a reference is resolved by: its id and name."""
    return SessionSummary.model_construct(id=ident, name=name)


def refused(sessions: list[SessionSummary], ref: str) -> BadReference:
    with pytest.raises(BadReference) as error:
        resolve(sessions, ref)
    return error.value


SESSIONS = [session("s1a2", "build"), session("s1b3", "s1a2x"), session("s9", "tests")]


def test_an_id_then_a_name_then_a_unique_prefix() -> None:
    assert resolve(SESSIONS, "s1a2") == "s1a2"
    assert resolve(SESSIONS, "build") == "s1a2"
    assert resolve(SESSIONS, "s1a2x") == "s1b3", "a name before a prefix"
    assert resolve(SESSIONS, "s1b") == "s1b3"
    assert resolve(SESSIONS, "s9") == "s9"


def test_an_id_wins_over_a_name_that_is_that_id() -> None:
    sessions = [session("s1", "x"), session("s2", "s1")]
    assert resolve(sessions, "s1") == "s1"


def test_several_names_or_prefixes_are_ambiguous_and_listed() -> None:
    twins = [session("s1", "same"), session("s2", "same")]
    error = refused(twins, "same")
    assert error.code == "bad_request"
    assert error.message == "'same' could be any of: s1 (same), s2 (same)"
    assert refused(SESSIONS, "s1").code == "bad_request"
    # Two sessions of one name: not resolved by prefix either, though one id starts so.
    assert refused([*twins, session("samex", "y")], "same").code == "bad_request"


def test_none_named_lists_the_sessions_and_the_candidates_are_bounded() -> None:
    assert refused([], "x").message == "no session 'x' (there are none)"
    many = [session(f"s{i:02}", f"n{i}") for i in range(SHOWN_CANDIDATES + 3)]
    error = refused(many, "zzz")
    assert error.code == "unknown_session"
    assert error.message.endswith(" and 3 more)") and "s07 (n7)" in error.message
    assert "s08" not in error.message
    assert refused(many, "s").message.endswith(" and 3 more")


def test_an_empty_reference_is_no_prefix_of_everything() -> None:
    assert refused([session("s1", "a")], "").code == "unknown_session"
    assert resolve([session("s1", "")], "") == "s1", "the session named nothing, though"


IDS = st.text("s0123ab", min_size=1, max_size=4)
NAMES = st.text("s0123ab \x1b\n", max_size=4)


@given(
    st.lists(st.tuples(IDS, NAMES), max_size=6, unique_by=lambda pair: pair[0]),
    IDS | NAMES,
)
def test_a_resolved_reference_names_its_session_and_a_refused_one_says_why(
    pairs: list[tuple[str, str]], ref: str
) -> None:
    sessions = [session(ident, name) for ident, name in pairs]
    try:
        found = resolve(sessions, ref)
    except BadReference as error:
        assert error.code in ("bad_request", "unknown_session")
        assert repr(ref) in error.message and ref not in {s.id for s in sessions}
        return
    (chosen,) = [s for s in sessions if s.id == found]
    assert ref in (chosen.id, chosen.name) or (ref and chosen.id.startswith(ref))
    if any(s.id == ref for s in sessions):
        assert found == ref
    elif sum(s.name == ref for s in sessions) == 1:
        assert chosen.name == ref
