"""A session's identity (server/identity.py) as the keeper and the records keep it:
every name, whatever its bytes, comes back exactly; anything else stored there is one
`BadIdentity`, which costs that record or adoption, never the server."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from ptyvisor.errors import BadIdentity
from ptyvisor.server.identity import Identity

NAMES = st.binary(max_size=20).map(os.fsdecode)
"""Names as argv and paths give them: any bytes, undecodable ones as surrogates."""

IDENTITIES = st.builds(
    Identity,
    id=st.from_regex(r"s[0-9a-f]{8}", fullmatch=True),
    name=NAMES,
    argv=st.lists(NAMES, min_size=1, max_size=4),
    command=st.lists(NAMES, min_size=1, max_size=4),
    cwd=NAMES,
    agent=st.none() | st.sampled_from(["claude-code", "codex"]),
    created_at=st.integers(0, 2**53),
    nonce=st.text("0123456789abcdef", min_size=32, max_size=32),
    recording=st.none() | st.text(max_size=10),
    term=st.sampled_from(["xterm-256color", "dumb"]),
    via=st.none() | st.lists(NAMES, max_size=3),
    resume=st.none() | st.text(max_size=10),
    worktree=st.none() | NAMES,
)


@given(IDENTITIES)
def test_an_identity_comes_back_exactly_through_json(identity: Identity) -> None:
    stored = json.dumps(identity.to_json())  # JSON text: no surrogate may be left in it
    stored.encode("utf-8")
    assert Identity.from_json(json.loads(stored)) == identity


def test_agent_args_leave_out_the_program_and_the_wrapper() -> None:
    base = Identity("s1", "n", ["x"], ["claude", "--model", "opus"], "/", "claude-code", 1, "n")
    assert base.agent_args == ["--model", "opus"]
    wrapped = Identity(
        "s1", "n", ["ssh"], ["ssh", "-t", "box", "claude", "-c"], "/", "claude-code", 1, "n",
        via=["ssh", "-t", "box"],
    )  # fmt: skip
    assert wrapped.agent_args == ["-c"]


def test_an_identity_from_before_term_was_kept_is_still_read() -> None:
    old = Identity("s1", "n", ["sh"], ["sh"], "/", None, 1, "n").to_json()
    del old["term"], old["via"], old["resume"], old["worktree"]
    assert Identity.from_json(old).term == "xterm-256color"


VALID = Identity("s1", "name", ["sh"], ["sh"], "/tmp", None, 5, "n" * 32).to_json()
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


@given(field=st.sampled_from(sorted(VALID)), value=JSON)
@example(field="created_at", value=float("inf"))
@example(field="created_at", value=float("nan"))
@example(field="name", value="not base64!")
@example(field="argv", value=["é"])
def test_anything_else_stored_is_bad_identity(field: str, value: Any) -> None:
    """A corrupted record or a keeper's message: an identity or `BadIdentity`."""
    try:
        identity = Identity.from_json({**VALID, field: value})
    except BadIdentity:
        return
    json.dumps(identity.to_json()).encode("utf-8")


@given(st.dictionaries(st.sampled_from(sorted(VALID)), JSON, max_size=len(VALID)))
def test_any_fields_are_an_identity_or_bad_identity(data: dict[str, Any]) -> None:
    with contextlib.suppress(BadIdentity):
        Identity.from_json(data)
