"""The pending-interaction model (agents/interaction.py), which every interaction an
agent reports passes before a client sees it: its bounds hold exactly at their
limits, anything unknown or malformed is a ValidationError, and the hooks and the
JavaScript extensions cut to the same bounds, so what they send is never refused."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ptyvisor.agents import interaction
from ptyvisor.agents.hooks import normalise
from ptyvisor.agents.interaction import Interaction, Option, Question, Row

from .hooks.payloads import JSON
from .test_extensions import run_node


def approval() -> dict[str, Any]:
    """An approval as a hook frames it, every field set."""
    return {
        "id": "req-0123",
        "kind": "approval",
        "agent": "claude-code",
        "tool": "Bash",
        "title": "Run a shell command",
        "rows": [{"label": "Command", "value": "make", "monospace": True}],
        "suggestions": ["Always allow make"],
        "questions": [],
        "accepts_free_form": False,
        "created_at": 1_700_000_000_000,
    }


def question() -> dict[str, Any]:
    q = {
        "id": "q0",
        "header": "Colour",
        "question": "Which?",
        "options": [{"label": "Red", "description": "warm"}],
        "multi_select": True,
    }
    return {**approval(), "kind": "question", "rows": [], "questions": [q]}


def test_what_a_hook_sends_is_kept_as_sent() -> None:
    for sent in (approval(), question()):
        model = Interaction.model_validate(sent)
        assert model.model_dump() == sent
        assert Interaction.model_validate_json(model.model_dump_json()) == model


def test_what_may_be_left_out_has_empty_defaults() -> None:
    least = Interaction.model_validate(
        {"id": "x", "kind": "approval", "agent": "codex", "created_at": 0}
    )
    assert (least.tool, least.title, least.rows, least.suggestions, least.questions) == (
        "",
        "",
        [],
        [],
        [],
    )
    assert least.accepts_free_form is False
    assert Row(label="L", value="v").monospace is False
    assert Option(label="A").description == ""
    asked = Question(id="q", question="?")
    assert (asked.header, asked.options, asked.multi_select) == ("", [], False)


Setter = Callable[[dict[str, Any], object], None]


def field(*path: str | int) -> Setter:
    """Sets the value at ``path`` in an interaction's dict."""

    def put(data: dict[str, Any], value: object) -> None:
        target: Any = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return put


MAX_TEXT = 4000  # as written, not imported: a changed bound is seen
TEXTS = [
    (approval, field("title")),
    (approval, field("rows", 0, "value")),
    (approval, field("suggestions", 0)),
    (question, field("questions", 0, "header")),
    (question, field("questions", 0, "question")),
    (question, field("questions", 0, "options", 0, "label")),
    (question, field("questions", 0, "options", 0, "description")),
]
SHORT = [
    (approval, field("rows", 0, "label"), 64),
    (approval, field("agent"), 64),
    (approval, field("tool"), 256),
    (approval, field("id"), 256),
    (question, field("questions", 0, "id"), 256),
]


@pytest.mark.parametrize(
    ("make", "put", "limit"),
    [(make, put, MAX_TEXT) for make, put in TEXTS] + SHORT,
)
def test_each_text_is_bounded_in_code_points(
    make: Callable[[], dict[str, Any]], put: Setter, limit: int
) -> None:
    """A limit counts characters as Python and the extensions cut them: four-byte
    emoji up to the limit pass, one more is refused."""
    for fill in ("x", "🙂"):
        at_limit = make()
        put(at_limit, fill * limit)
        Interaction.model_validate(at_limit)
        past = make()
        put(past, fill * (limit + 1))
        with pytest.raises(ValidationError):
            Interaction.model_validate(past)


LISTS = [
    (approval, "rows", {"label": "L", "value": "v"}, 16),
    (approval, "suggestions", "s", 16),
    (question, "questions", {"id": "q", "question": "?"}, 8),
]


@pytest.mark.parametrize(("make", "name", "item", "limit"), LISTS)
def test_each_list_is_bounded(
    make: Callable[[], dict[str, Any]], name: str, item: object, limit: int
) -> None:
    at_limit = make()
    at_limit[name] = [copy.deepcopy(item) for _ in range(limit)]
    assert len(getattr(Interaction.model_validate(at_limit), name)) == limit
    at_limit[name].append(item)
    with pytest.raises(ValidationError):
        Interaction.model_validate(at_limit)


def test_a_questions_options_are_bounded() -> None:
    asked = question()
    asked["questions"][0]["options"] = [{"label": str(n)} for n in range(16)]
    Interaction.model_validate(asked)
    asked["questions"][0]["options"].append({"label": "one too many"})
    with pytest.raises(ValidationError):
        Interaction.model_validate(asked)


@pytest.mark.parametrize(
    "where",
    [(), ("rows", 0), ("questions", 0), ("questions", 0, "options", 0)],
)
def test_an_unknown_field_anywhere_is_refused(where: tuple[str | int, ...]) -> None:
    """``extra="forbid"``: a field ptyvisor does not know is not passed on to clients."""
    for make in (approval, question):
        bad = make()
        target: Any = bad
        try:
            for key in where:
                target = target[key]
        except IndexError:
            continue  # an approval has no questions
        target["onclick"] = "alert(1)"
        with pytest.raises(ValidationError, match="onclick"):
            Interaction.model_validate(bad)


def test_a_value_of_the_wrong_type_is_refused_not_coerced_to_text() -> None:
    for spoil, value in [
        (field("title"), 42),
        (field("rows", 0, "value"), ["make"]),
        (field("suggestions"), "one string, not a list"),
        (field("rows"), {"label": "L", "value": "v"}),
    ]:
        bad = approval()
        spoil(bad, value)
        with pytest.raises(ValidationError):
            Interaction.model_validate(bad)


def test_a_reported_interaction_cannot_be_changed_afterwards() -> None:
    """It is shared by every client's summary and the held request: frozen."""
    model = Interaction.model_validate(approval())
    with pytest.raises(ValidationError):
        model.title = "Something harmless"
    with pytest.raises(ValidationError):
        model.rows[0].value = "rm -rf /"


def test_the_hooks_and_the_extensions_cut_to_the_models_bounds() -> None:
    """Three copies of the bounds: this model, the stdlib-only hooks' and the
    JavaScript extensions' (agent-extensions/shared/mask.mjs)."""
    ours = {
        name: getattr(interaction, name)
        for name in ("MAX_TEXT", "MAX_QUESTIONS", "MAX_OPTIONS", "MAX_SUGGESTIONS", "MAX_ROWS")
    }
    assert ours == {name: getattr(normalise, name) for name in ours}
    script = (
        'import * as mask from "./agent-extensions/shared/mask.mjs";'
        "process.stdout.write(JSON.stringify(mask));"
    )
    result = run_node(script)
    js = json.loads(result.stdout)
    assert {name: js[name] for name in ours} == ours
    assert (js["MAX_ID"], js["MAX_LABEL"], js["MAX_TOOL"]) == (256, 64, 256)


# ------------------------------------------------------------------ untrusted input


def ends(least: int, most: int) -> st.SearchStrategy[int]:
    """The lengths at the ends of a bound, and one."""
    return st.sampled_from(sorted({least, 1, most}))


def chars(least: int, most: int) -> st.SearchStrategy[str]:
    return ends(least, most).flatmap(lambda n: st.text(min_size=n, max_size=n))


def items(item: st.SearchStrategy[Any], most: int) -> st.SearchStrategy[list[Any]]:
    return ends(0, most).flatmap(lambda n: st.lists(item, min_size=n, max_size=n))


WORDS = st.text(max_size=8)
ROW = st.fixed_dictionaries({"label": WORDS, "value": WORDS}, optional={"monospace": st.booleans()})
QUESTION = st.fixed_dictionaries(
    {"id": chars(1, 256), "question": WORDS},
    optional={"options": items(st.fixed_dictionaries({"label": WORDS}), 16)},
)
WITHIN_BOUNDS = st.fixed_dictionaries(
    {
        "id": chars(1, 256),
        "kind": st.sampled_from(["approval", "question"]),
        "agent": chars(0, 64),
        "created_at": st.integers(0, 2**53),
    },
    optional={
        "tool": chars(0, 256),
        "title": WORDS,
        "rows": items(ROW, 16),
        "suggestions": items(WORDS, 16),
        "questions": items(QUESTION, 8),
        "accepts_free_form": st.booleans(),
    },
)
"""Interactions as a hook frames them, each length anywhere up to its bound."""


@settings(max_examples=150, deadline=None)
@given(WITHIN_BOUNDS)
def test_within_every_bound_an_interaction_is_taken_as_sent(data: dict[str, Any]) -> None:
    model = Interaction.model_validate(data)
    assert model.model_dump(exclude_unset=True) == data


def past(key: str, value: object) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda data: {**data, key: value}


def one_option_too_many(data: dict[str, Any]) -> dict[str, Any]:
    options = [{"label": str(n)} for n in range(17)]
    return {**data, "questions": [{"id": "q", "question": "?", "options": options}]}


PAST_A_BOUND = [
    past("id", ""),
    past("id", "i" * 257),
    past("agent", "a" * 65),
    past("tool", "t" * 257),
    past("title", "t" * 4001),
    past("created_at", -1),
    past("kind", "maybe"),
    past("rows", [{"label": "L", "value": "v"}] * 17),
    past("rows", [{"label": "L" * 65, "value": "v"}]),
    past("suggestions", ["s"] * 17),
    past("questions", [{"id": "q", "question": "?"}] * 9),
    past("questions", [{"id": "", "question": "?"}]),
    one_option_too_many,
    past("onclick", "alert(1)"),
]


@settings(max_examples=150, deadline=None)
@given(WITHIN_BOUNDS, st.sampled_from(PAST_A_BOUND))
def test_one_bound_broken_is_refused_whatever_else_is_there(
    data: dict[str, Any], breaking: Callable[[dict[str, Any]], dict[str, Any]]
) -> None:
    with pytest.raises(ValidationError):
        Interaction.model_validate(breaking(data))


def spoiled(data: dict[str, Any], key: str, value: object) -> dict[str, Any]:
    return {**data, key: value}


SPOILED = st.builds(
    spoiled, WITHIN_BOUNDS, st.sampled_from([*Interaction.model_fields, "onclick"]), JSON
)
"""One field of any JSON value, or one field too many."""


@settings(max_examples=300, deadline=None)
@given(SPOILED | JSON | SPOILED.map(json.dumps).map(str.encode) | st.binary())
def test_anything_is_an_interaction_or_a_validation_error(data: object) -> None:
    """What an agent's hook or extension reports is untrusted, as a value or as JSON
    text: the model takes it or refuses it with a ValidationError, never another
    error, and what it takes survives the trip to a client."""
    try:
        if isinstance(data, bytes):
            model = Interaction.model_validate_json(data)
        else:
            model = Interaction.model_validate(data)
    except ValidationError:
        return
    assert Interaction.model_validate_json(model.model_dump_json()) == model
