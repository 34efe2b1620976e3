"""A typed pending interaction: the exact approval or question an agent is blocked on.

Provider-neutral: Claude Code's PermissionRequest / AskUserQuestion, Codex's
approvals and request_user_input, OpenCode's permission.asked / question.asked all
become this one shape, *inside the extension*, already masked and bounded (see
``agent-extensions/README.md``). ptyvisor validates the bounds again, so a client
can render the card without defending itself.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_TEXT = 4000
MAX_QUESTIONS = 8
MAX_OPTIONS = 16
MAX_SUGGESTIONS = 16
MAX_ROWS = 16

Text = Annotated[str, Field(max_length=MAX_TEXT)]
ShortId = Annotated[str, Field(min_length=1, max_length=256)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Row(_Model):
    """One labelled line of an approval card (Command, File, Description …)."""

    label: Annotated[str, Field(max_length=64)]
    value: Text
    monospace: bool = False


class Option(_Model):
    label: Text
    description: Text = ""


class Question(_Model):
    id: ShortId
    header: Text = ""
    question: Text
    options: Annotated[list[Option], Field(max_length=MAX_OPTIONS)] = []
    multi_select: bool = False


class Interaction(_Model):
    """What the agent is waiting for; ``id`` is stable for the life of the request."""

    id: ShortId
    kind: Literal["approval", "question"]
    agent: Annotated[str, Field(max_length=64)]
    tool: Annotated[str, Field(max_length=256)] = ""
    title: Text = ""
    rows: Annotated[list[Row], Field(max_length=MAX_ROWS)] = []
    suggestions: Annotated[list[Text], Field(max_length=MAX_SUGGESTIONS)] = []
    questions: Annotated[list[Question], Field(max_length=MAX_QUESTIONS)] = []
    accepts_free_form: bool = False
    created_at: int = Field(ge=0, description="Unix ms")
