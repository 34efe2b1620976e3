"""A scripted fake model server on 127.0.0.1, so the real agent CLIs run fully offline.

It speaks the three streaming APIs the agents use, with the framing the real services
use (see ``tests/agents/clis/test_fake_model.py``):

* Anthropic Messages: ``POST /v1/messages`` (Claude Code adds ``?beta=true``), SSE with
  ``event:`` lines;
* OpenAI Responses: ``POST /v1/responses`` (Codex), SSE with ``event:`` lines;
* OpenAI Chat Completions: ``POST /v1/chat/completions`` (OpenCode, Pi), ``data:``
  chunks ending with ``data: [DONE]``;
* Gemini: ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` (Gemini CLI),
  ``data:`` chunks of ``GenerateContentResponse``, and ``:generateContent``.

A test scripts the model's turns in order with :meth:`FakeModelServer.script`; each
request that carries tools takes the next :class:`Reply`. Requests without tools are the
agents' side requests (session titles and the like): they get :attr:`side_text` and do
not consume the script. Anything else (an unknown path, a bad body, a tool-bearing
request when the script is empty) is recorded as unexpected and answered 500, and
:meth:`FakeModelServer.assert_no_unexpected` fails the test. Every request is recorded.

Only the stdlib: a small HTTP/1.1 server on ``asyncio`` streams (keep-alive, chunked
bodies both ways), run in the test's own event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import itertools
import json
import re
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Self
from urllib.parse import parse_qs, urlsplit

from tests.timeouts import scaled

__all__ = [
    "ASK_TOOLS",
    "SHELL_TOOLS",
    "Api",
    "FakeModelServer",
    "Reply",
    "Request",
    "ToolResult",
]

Api = Literal["anthropic", "responses", "chat", "gemini"]
ReplyKind = Literal["text", "tool", "error"]

ROUTES: dict[str, Api] = {
    "/v1/messages": "anthropic",
    "/v1/responses": "responses",
    "/v1/chat/completions": "chat",
}
GEMINI_ROUTE = re.compile(r"/v1(?:beta|alpha)?/models/(?P<model>[^/:]+):(?P<method>\w+)")
"""Gemini's routes name the model and the method in the path."""
GEMINI_METHODS = ("generateContent", "streamGenerateContent")

ASK_TOOLS: dict[str, str] = {
    "claude-code": "AskUserQuestion",
    "codex": "request_user_input",
    "opencode": "question",
    "kilo": "question",
    "gemini-cli": "ask_user",
    "qwen-code": "ask_user_question",
    "copilot": "ask_user",
    "droid": "AskUser",
    "cline": "ask_question",
}
"""Each agent's own tool for asking the user a multiple-choice question (Pi has none)."""
SHELL_TOOLS: dict[str, str] = {
    "claude-code": "Bash",
    "codex": "exec_command",
    "opencode": "bash",
    "kilo": "bash",
    "pi": "bash",
    "oh-my-pi": "bash",
    "gemini-cli": "run_shell_command",
    "qwen-code": "run_shell_command",
    "copilot": "bash",
    "droid": "Execute",
    "cline": "run_commands",
}
"""Each agent's shell tool, as named in the ``tools`` list it sends."""

MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_GOOGLE_ERROR_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
}
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    413: "Payload Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}


@dataclass(frozen=True)
class Reply:
    """One scripted model turn. Build with :meth:`text`, :meth:`tool`, :meth:`shell`,
    :meth:`ask` or :meth:`error`."""

    kind: ReplyKind
    content: str = ""
    """The answer text, text shown before a tool call, or the error message."""
    tool_name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None
    status: int = 200
    times: int = 1
    """How many requests this reply answers (an error the agent retries needs several)."""
    delay: float = 0.0
    """Seconds the server waits before answering (the agent is working meanwhile)."""
    when: Callable[[Request], bool] | None = field(default=None, compare=False)
    """Only a request this accepts takes the reply (the first fitting one in the script
    is used): for agents that ask from several threads at once, e.g. a background
    subagent beside the main thread."""

    @classmethod
    def text(cls, text: str) -> Reply:
        """A plain assistant answer that ends the turn."""
        return cls("text", content=text)

    @classmethod
    def tool(
        cls,
        name: str,
        arguments: dict[str, Any],
        *,
        text: str = "",
        call_id: str | None = None,
    ) -> Reply:
        """A tool call (with optional text before it); the turn ends waiting for its result."""
        return cls("tool", content=text, tool_name=name, arguments=dict(arguments), call_id=call_id)

    @classmethod
    def shell(
        cls,
        agent: str,
        command: str,
        *,
        description: str = "Run a command",
        call_id: str | None = None,
    ) -> Reply:
        """A shell command through ``agent``'s own tool, shaped so that it needs approval
        where the agent has approvals (Codex: ``require_escalated``; Pi never asks)."""
        if agent in ("claude-code", "opencode", "kilo", "gemini-cli", "qwen-code", "copilot"):
            arguments: dict[str, Any] = {"command": command, "description": description}
        elif agent == "codex":
            arguments = {
                "cmd": command,
                "sandbox_permissions": "require_escalated",
                "justification": description,
            }
        elif agent in ("pi", "oh-my-pi"):
            arguments = {"command": command}
        elif agent == "droid":
            # Its summary must be a capitalised 3-8 words; "medium" risk asks by default.
            arguments = {
                "command": command,
                "summary": description if len(description.split()) >= 3 else "Run the command",
                "riskLevelReason": description,
                "riskLevel": "medium",
            }
        elif agent == "cline":
            arguments = {"commands": [command]}
        else:
            raise ValueError(f"unknown agent {agent!r}")
        return cls.tool(SHELL_TOOLS[agent], arguments, call_id=call_id)

    @classmethod
    def ask(
        cls,
        agent: str,
        question: str,
        options: list[str],
        *,
        header: str = "Choice",
        call_id: str | None = None,
        multi_select: bool = False,
    ) -> Reply:
        """A multiple-choice question through ``agent``'s own ask tool (see ASK_TOOLS);
        ``multi_select`` (Claude Code, Qwen Code) lets the user pick several options."""
        described = [{"label": label, "description": f"Pick {label}"} for label in options]
        if multi_select and agent not in ("claude-code", "qwen-code"):
            raise ValueError(f"{agent}'s ask tool has no multi-select questions here")
        if agent in ("claude-code", "qwen-code"):
            q: dict[str, Any] = {
                "question": question,
                "header": header,
                "options": described,
                "multiSelect": multi_select,
            }
        elif agent == "codex":
            q = {"id": "q0", "header": header, "question": question, "options": described}
        elif agent in ("opencode", "kilo"):
            q = {"question": question, "header": header, "options": described}
        elif agent == "gemini-cli":
            q = {"question": question, "header": header, "type": "choice", "options": described}
        elif agent == "droid":
            # One text: a numbered [question] line, its [topic], an [option] a line.
            lines = [f"1. [question] {question}", f"[topic] {header}"]
            lines += [f"[option] {label}" for label in options]
            return cls.tool(ASK_TOOLS[agent], {"questionnaire": "\n".join(lines)}, call_id=call_id)
        elif agent == "cline":
            # One question, its choices plain labels (two to five).
            arguments = {"question": question, "options": options}
            return cls.tool(ASK_TOOLS[agent], arguments, call_id=call_id)
        elif agent == "copilot":
            # An elicitation form: one string field whose enum is the choices.
            field_ = {"type": "string", "title": header, "enum": options}
            schema = {"properties": {header.lower(): field_}, "required": [header.lower()]}
            return cls.tool(
                ASK_TOOLS[agent], {"message": question, "requestedSchema": schema}, call_id=call_id
            )
        else:
            raise ValueError(f"{agent} has no ask tool")
        return cls.tool(ASK_TOOLS[agent], {"questions": [q]}, call_id=call_id)

    @classmethod
    def error(cls, status: int, message: str, *, times: int = 1) -> Reply:
        """An HTTP error with the provider's JSON error body, for ``times`` requests in a
        row: agents retry 429/5xx (Claude Code and Codex several times, with backoff), so a
        5xx usually needs ``times`` > 1 or the retry is answered by the next reply."""
        if status < 400:
            raise ValueError("an error reply needs a 4xx or 5xx status")
        return cls("error", content=message, status=status, times=times)


@dataclass(frozen=True)
class ToolResult:
    """A tool result the agent sent back to the model, whatever the API."""

    call_id: str
    output: str
    is_error: bool = False


@dataclass
class Request:
    """One request the server received, and what it did with it."""

    index: int
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    raw_body: bytes
    body: Any
    api: Api | None
    at: float
    outcome: Literal["scripted", "side", "probe", "unexpected"] = "unexpected"
    reply: Reply | None = None
    call_id: str | None = None
    """The tool call id the server generated for a scripted tool reply."""
    problem: str = ""

    @property
    def has_tools(self) -> bool:
        return bool(self.tool_names)

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered to the model (built-in Responses tools by type)."""
        if not isinstance(self.body, dict):
            return []
        names: list[str] = []
        for tool in self.body.get("tools") or []:
            if not isinstance(tool, dict):
                continue
            declarations = tool.get("functionDeclarations")
            if isinstance(declarations, list):  # Gemini: one entry declares many functions
                names.extend(str(d.get("name")) for d in declarations if isinstance(d, dict))
                continue
            function = tool.get("function")
            if isinstance(function, dict) and "name" in function:
                names.append(str(function["name"]))
            elif "name" in tool:
                names.append(str(tool["name"]))
            elif "type" in tool:
                names.append(str(tool["type"]))
        return names

    def tool(self, name: str) -> dict[str, Any] | None:
        """The offered tool definition called ``name``, as sent."""
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        for tool in tools or []:
            if not isinstance(tool, dict):
                continue
            for declaration in tool.get("functionDeclarations") or []:
                if isinstance(declaration, dict) and declaration.get("name") == name:
                    return declaration
            function = tool.get("function")
            tool_name = function.get("name") if isinstance(function, dict) else tool.get("name")
            if tool_name == name or (tool_name is None and tool.get("type") == name):
                return tool
        return None

    @property
    def model(self) -> str:
        if self.api == "gemini":
            route = GEMINI_ROUTE.fullmatch(self.path)
            return route["model"] if route else ""
        return str((self.body or {}).get("model", "")) if isinstance(self.body, dict) else ""

    @property
    def streaming(self) -> bool:
        if self.api == "gemini":
            return self.path.endswith(":streamGenerateContent")
        return isinstance(self.body, dict) and self.body.get("stream") is True

    def tool_results(self) -> list[ToolResult]:
        """Every tool result carried in the conversation, oldest first."""
        if not isinstance(self.body, dict):
            return []
        results: list[ToolResult] = []
        if self.api == "anthropic":
            for message in self.body.get("messages") or []:
                content = message.get("content") if isinstance(message, dict) else None
                for block in content if isinstance(content, list) else []:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        results.append(
                            ToolResult(
                                str(block.get("tool_use_id", "")),
                                _flatten(block.get("content")),
                                bool(block.get("is_error", False)),
                            )
                        )
        elif self.api == "responses":
            items = self.body.get("input")
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict) and item.get("type") in (
                    "function_call_output",
                    "custom_tool_call_output",
                    "local_shell_call_output",
                ):
                    results.append(
                        ToolResult(str(item.get("call_id", "")), _flatten(item.get("output")))
                    )
        elif self.api == "gemini":
            for part in _gemini_parts(self.body, "user"):
                response = part.get("functionResponse")
                if isinstance(response, dict):
                    output = response.get("response")
                    failed = isinstance(output, dict) and "error" in output
                    if isinstance(output, dict) and len(output) == 1:
                        output = next(iter(output.values()))  # {"output": …} / {"error": …}
                    results.append(
                        ToolResult(str(response.get("id", "")), _flatten(output), failed)
                    )
        elif self.api == "chat":
            for message in self.body.get("messages") or []:
                if isinstance(message, dict) and message.get("role") == "tool":
                    results.append(
                        ToolResult(
                            str(message.get("tool_call_id", "")), _flatten(message.get("content"))
                        )
                    )
        return results

    def tool_result(self, call_id: str) -> ToolResult | None:
        return next((r for r in self.tool_results() if r.call_id == call_id), None)

    def user_texts(self) -> list[str]:
        """The text of every user message / input item, oldest first."""
        if not isinstance(self.body, dict):
            return []
        texts: list[str] = []
        if self.api == "gemini":
            for content in self.body.get("contents") or []:
                if isinstance(content, dict) and content.get("role") == "user":
                    parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
                    text = "\n".join(str(p["text"]) for p in parts if "text" in p)
                    if text:
                        texts.append(text)
            return texts
        entries = self.body.get("messages") if self.api != "responses" else self.body.get("input")
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and entry.get("role") == "user":
                content = entry.get("content")
                if isinstance(content, list):
                    content = [
                        c
                        for c in content
                        if not (isinstance(c, dict) and c.get("type") == "tool_result")
                    ]
                text = _flatten(content)
                if text:
                    texts.append(text)
        return texts

    def mentions(self, text: str) -> bool:
        """Whether ``text`` occurs anywhere in the body (after JSON string decoding)."""
        return text in self.raw_body.decode("utf-8", "replace") or text in json.dumps(
            self.body, ensure_ascii=False
        )

    def summary(self) -> str:
        parts = [f"#{self.index} {self.method} {self.path}", self.outcome]
        if self.model:
            parts.append(f"model={self.model}")
        if self.has_tools:
            parts.append(f"tools={len(self.tool_names)}")
        if self.problem:
            parts.append(self.problem)
        return " ".join(parts)


def _flatten(content: Any) -> str:
    """Text out of a content field: a string, a list of text parts, or anything as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                pieces.append(part["text"])
            elif isinstance(part, str):
                pieces.append(part)
            else:
                pieces.append(json.dumps(part, ensure_ascii=False))
        return "\n".join(pieces)
    return json.dumps(content, ensure_ascii=False)


class _HttpError(Exception):
    """The request could not be parsed; the connection is answered 400 and closed."""


@dataclass
class _Scripted:
    reply: Reply
    remaining: int


class FakeModelServer:
    """The server. ``async with FakeModelServer() as server:`` then ``server.base_url``."""

    def __init__(self, *, side_text: str = "Fake title") -> None:
        self.side_text = side_text
        self.requests: list[Request] = []
        self._script: list[_Scripted] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._changed = asyncio.Event()
        self._ids = itertools.count(1)
        self.port = 0

    # -- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._connection, "127.0.0.1", 0, limit=MAX_HEADER_BYTES
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        """Stop listening and end every connection (closing them lets each handler finish
        on end-of-file; only a handler stuck in a write is cancelled)."""
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        tasks = list(self._tasks)
        if tasks:
            _, stuck = await asyncio.wait(tasks, timeout=2)
            for task in stuck:
                task.cancel()
            if stuck:
                await asyncio.wait(stuck, timeout=2)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no ``/v1``: add it where a client wants it)."""
        return f"http://127.0.0.1:{self.port}"

    # -- scripting and assertions ----------------------------------------------

    def script(self, *replies: Reply) -> None:
        """Queue model turns; each tool-bearing request takes the next one."""
        for reply in replies:
            self._script.append(_Scripted(reply, max(1, reply.times)))

    @property
    def pending(self) -> int:
        """Scripted replies not used yet."""
        return len(self._script)

    @property
    def unexpected(self) -> list[Request]:
        return [r for r in self.requests if r.outcome == "unexpected"]

    @property
    def scripted(self) -> list[Request]:
        """The requests that took a scripted reply, in order."""
        return [r for r in self.requests if r.outcome == "scripted"]

    def assert_no_unexpected(self) -> None:
        """Fail with a list of every request the script did not account for."""
        bad = self.unexpected
        if bad:
            lines = "\n".join(f"  {r.summary()}" for r in bad)
            raise AssertionError(f"{len(bad)} unexpected request(s) to the fake model:\n{lines}")

    async def wait_for_request(
        self,
        predicate: Callable[[Request], bool] = lambda r: True,
        *,
        since: int = 0,
        wait: float = 30.0,
    ) -> Request:
        """The first request at index ``since`` or later matching ``predicate``; waits up to
        ``wait`` seconds, then fails listing what did arrive."""
        deadline = time.monotonic() + scaled(wait)
        while True:
            changed = self._changed
            for request in self.requests[since:]:
                if predicate(request):
                    return request
            left = deadline - time.monotonic()
            if left <= 0:
                seen = "\n".join(f"  {r.summary()}" for r in self.requests) or "  (none)"
                raise AssertionError(
                    f"no matching request to the fake model within {wait} s; seen:\n{seen}"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), left)

    async def answer_to(self, call: Request, *, wait: float = 30.0) -> tuple[Request, ToolResult]:
        """The later scripted request carrying the tool result of ``call``'s tool call
        (what the agent sent back once the tool ran or was refused), and that result."""
        call_id = call.call_id
        assert call_id is not None, f"no tool call in {call.summary()}"
        later = await self.wait_for_request(
            lambda r: r.outcome == "scripted" and r.tool_result(call_id) is not None, wait=wait
        )
        result = later.tool_result(call_id)
        assert result is not None
        return later, result

    def __iter__(self) -> Iterator[Request]:
        return iter(self.requests)

    # -- HTTP ------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            while await self._one_request(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # Only close() cancels a handler; asyncio's start_server would log a cancelled
            # handler task as an error, so end it normally.
            pass
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _one_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Serve one request; returns whether the connection stays open."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as eof:
            if eof.partial.strip():
                await self._send(writer, 400, b"incomplete request\n", "text/plain", close=True)
            return False
        except asyncio.LimitOverrunError:
            await self._send(writer, 431, b"headers too large\n", "text/plain", close=True)
            return False
        try:
            method, target, headers = _parse_head(head)
            raw = await _read_body(reader, headers)
        except _HttpError as error:
            await self._send(writer, 400, f"{error}\n".encode(), "text/plain", close=True)
            return False
        keep_alive = headers.get("connection", "").lower() != "close"
        split = urlsplit(target)
        request = Request(
            index=len(self.requests),
            method=method,
            path=split.path,
            query=parse_qs(split.query),
            headers=headers,
            raw_body=raw,
            body=None,
            api=_api(split.path),
            at=time.time(),
        )
        self.requests.append(request)
        self._notify()
        try:
            await self._dispatch(request, writer, keep_alive)
        finally:
            self._notify()  # its outcome, reply and call id are known now
        return keep_alive

    def _notify(self) -> None:
        """Wake every wait_for_request (each waits on the event current when it looked)."""
        self._changed.set()
        self._changed = asyncio.Event()

    async def _dispatch(self, request: Request, writer: asyncio.StreamWriter, keep: bool) -> None:
        close = not keep
        if request.method in ("GET", "HEAD") and request.path == "/":
            request.outcome = "probe"
            body = b"fake model server\n"
            if request.method == "HEAD":
                await self._send(writer, 200, b"", "text/plain", close=close, length=len(body))
            else:
                await self._send(writer, 200, body, "text/plain", close=close)
            return
        if request.api is None or request.method != "POST":
            request.problem = "unknown endpoint"
            await self._send_error(writer, request, 500, "fake model: unknown endpoint", close)
            return
        try:
            request.body = json.loads(_decode(request.raw_body, request.headers))
        except (ValueError, OSError, zlib.error) as error:
            request.problem = f"bad body: {error}"
            await self._send_error(writer, request, 500, "fake model: unreadable body", close)
            return
        if not isinstance(request.body, dict):
            request.problem = "body is not a JSON object"
            await self._send_error(writer, request, 500, "fake model: bad body", close)
            return
        if not request.has_tools:
            request.outcome = "side"
            answer = _side_answer(request, self.side_text)
            await self._send_reply(writer, request, Reply.text(answer), close)
            return
        if not self._script:
            request.problem = "script empty"
            await self._send_error(writer, request, 500, "fake model: nothing scripted", close)
            return
        index = next((i for i, e in enumerate(self._script) if _fits(e.reply, request)), None)
        if index is None:
            request.problem = "no scripted reply fits"
            await self._send_error(writer, request, 500, "fake model: nothing fits", close)
            return
        entry = self._script[index]
        entry.remaining -= 1
        if entry.remaining <= 0:
            del self._script[index]
        request.outcome = "scripted"
        request.reply = entry.reply
        if entry.reply.delay:
            await asyncio.sleep(entry.reply.delay)
        if entry.reply.kind == "error":
            await self._send_error(writer, request, entry.reply.status, entry.reply.content, close)
            return
        await self._send_reply(writer, request, entry.reply, close)

    async def _send_reply(
        self, writer: asyncio.StreamWriter, request: Request, reply: Reply, close: bool
    ) -> None:
        assert request.api is not None
        if reply.kind == "tool":
            request.call_id = reply.call_id or _call_id(request.api, next(self._ids))
        reply_id = next(self._ids)
        if request.streaming:
            events = _STREAMERS[request.api](request, reply, reply_id)
            await self._send_stream(writer, events, close)
        else:
            body = json.dumps(_COMPLETERS[request.api](request, reply, reply_id)).encode()
            await self._send(writer, 200, body, "application/json", close=close)

    async def _send_error(
        self, writer: asyncio.StreamWriter, request: Request, status: int, message: str, close: bool
    ) -> None:
        if request.api == "anthropic":
            kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
            body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        elif request.api == "gemini":
            kind = _GOOGLE_ERROR_STATUSES.get(status, "INTERNAL")
            body = {"error": {"code": status, "message": message, "status": kind}}
        else:
            kind = _OPENAI_ERROR_TYPES.get(status, "server_error")
            body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
        await self._send(writer, status, json.dumps(body).encode(), "application/json", close=close)

    async def _send(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        body: bytes,
        content_type: str,
        *,
        close: bool,
        length: int | None = None,
    ) -> None:
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\n"
            f"Content-Type: {content_type}\r\n"
            f"Content-Length: {len(body) if length is None else length}\r\n"
            f"Connection: {'close' if close else 'keep-alive'}\r\n"
            "\r\n"
        )
        writer.write(head.encode() + body)
        await writer.drain()

    async def _send_stream(
        self, writer: asyncio.StreamWriter, events: list[bytes], close: bool
    ) -> None:
        """SSE over chunked transfer encoding, one chunk per event, as the services do."""
        head = (
            "HTTP/1.1 200 OK\r\n"
            "Content-Type: text/event-stream; charset=utf-8\r\n"
            "Cache-Control: no-cache\r\n"
            "Transfer-Encoding: chunked\r\n"
            f"Connection: {'close' if close else 'keep-alive'}\r\n"
            "\r\n"
        )
        writer.write(head.encode())
        for event in events:
            writer.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()


def _output_schema(body: dict[str, Any]) -> Any:
    """The JSON schema a request wants its answer to follow, if any (Codex's titles ask
    for ``{"title": ...}`` through Responses ``text.format``)."""
    candidates = [
        (body.get("text") or {}).get("format"),  # Responses
        (body.get("response_format") or {}).get("json_schema"),  # Chat Completions
        (body.get("output_config") or {}).get("format"),  # Anthropic
        body.get("output_format"),  # Anthropic (older beta)
    ]
    for candidate in candidates:
        if isinstance(candidate, dict) and isinstance(candidate.get("schema"), dict):
            return candidate["schema"]
    config = body.get("generationConfig") or {}  # Gemini: the schema itself
    return config.get("responseJsonSchema") or config.get("responseSchema")


def _example(schema: Any, text: str) -> Any:
    """A small value that satisfies ``schema`` (objects, strings, numbers, arrays, enums)."""
    if not isinstance(schema, dict):
        return text
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return _example(schema[key][0], text)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        required = schema.get("required") or list(properties)
        return {name: _example(properties.get(name), text) for name in required}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return text


def _fits(reply: Reply, request: Request) -> bool:
    return reply.when is None or reply.when(request)


def _side_answer(request: Request, text: str) -> str:
    schema = _output_schema(request.body) if isinstance(request.body, dict) else None
    return text if schema is None else json.dumps(_example(schema, text))


# -- HTTP parsing ---------------------------------------------------------------


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _HttpError(f"bad request line {lines[0]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise _HttpError(f"bad header line {line!r}")
        headers[name.strip().lower()] = value.strip()
    return parts[0], parts[1], headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if headers.get("expect", "").lower() == "100-continue":
        raise _HttpError("Expect: 100-continue is not supported")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks: list[bytes] = []
        total = 0
        while True:
            size_line = await reader.readuntil(b"\r\n")
            try:
                size = int(size_line.split(b";")[0].strip(), 16)
            except ValueError:
                raise _HttpError("bad chunk size") from None
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass  # trailers
                return b"".join(chunks)
            total += size
            if total > MAX_BODY_BYTES:
                raise _HttpError("body too large")
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise _HttpError("bad Content-Length") from None
    if not 0 <= length <= MAX_BODY_BYTES:
        raise _HttpError("bad Content-Length")
    return await reader.readexactly(length)


def _decode(raw: bytes, headers: dict[str, str]) -> bytes:
    encoding = headers.get("content-encoding", "identity").lower()
    if encoding in ("", "identity"):
        return raw
    if encoding == "gzip":
        return gzip.decompress(raw)
    if encoding == "deflate":
        return zlib.decompress(raw)
    raise ValueError(f"unsupported Content-Encoding {encoding}")


# -- wire shapes ------------------------------------------------------------------


def _call_id(api: Api, n: int) -> str:
    return f"toolu_fake{n:06d}" if api == "anthropic" else f"call_fake{n:06d}"


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    line = json.dumps(data, separators=(",", ":"))
    prefix = f"event: {event}\n" if event else ""
    return f"{prefix}data: {line}\n\n".encode()


def _pieces(text: str, size: int = 12) -> list[str]:
    """Split text into a few deltas, like a real stream."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _usage_anthropic(output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": 10,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _anthropic_blocks(request: Request, reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    text = reply.content
    if text or reply.kind == "text":
        blocks.append({"type": "text", "text": text})
    if reply.kind == "tool":
        blocks.append(
            {
                "type": "tool_use",
                "id": request.call_id,
                "name": reply.tool_name,
                "input": reply.arguments,
            }
        )
    return blocks


def _anthropic_stream(request: Request, reply: Reply, n: int) -> list[bytes]:
    blocks = _anthropic_blocks(request, reply)
    stop = "tool_use" if reply.kind == "tool" else "end_turn"
    message: dict[str, Any] = {
        "id": f"msg_fake{n:06d}",
        "type": "message",
        "role": "assistant",
        "model": request.model or "fake-model",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage_anthropic(1),
    }
    events = [_sse({"type": "message_start", "message": message}, "message_start")]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"])]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in _pieces(json.dumps(block["input"]), 24)
            ]
        events.append(
            _sse(
                {"type": "content_block_start", "index": index, "content_block": start},
                "content_block_start",
            )
        )
        if index == 0:
            events.append(_sse({"type": "ping"}, "ping"))
        for delta in deltas:
            events.append(
                _sse(
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    "content_block_delta",
                )
            )
        events.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    events.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
            "message_delta",
        )
    )
    events.append(_sse({"type": "message_stop"}, "message_stop"))
    return events


def _anthropic_complete(request: Request, reply: Reply, n: int) -> dict[str, Any]:
    return {
        "id": f"msg_fake{n:06d}",
        "type": "message",
        "role": "assistant",
        "model": request.model or "fake-model",
        "content": _anthropic_blocks(request, reply),
        "stop_reason": "tool_use" if reply.kind == "tool" else "end_turn",
        "stop_sequence": None,
        "usage": _usage_anthropic(5),
    }


def _responses_items(request: Request, reply: Reply, n: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    text = reply.content
    if text or reply.kind == "text":
        items.append(
            {
                "type": "message",
                "id": f"msg_fake{n:06d}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    if reply.kind == "tool":
        items.append(
            {
                "type": "function_call",
                "id": f"fc_fake{n:06d}",
                "status": "completed",
                "call_id": request.call_id,
                "name": reply.tool_name,
                "arguments": json.dumps(reply.arguments),
            }
        )
    return items


def _responses_object(
    request: Request, n: int, status: str, output: list[dict[str, Any]]
) -> dict[str, Any]:
    done = status == "completed"
    return {
        "id": f"resp_fake{n:06d}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": request.model or "fake-model",
        "output": output,
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        if done
        else None,
    }


def _responses_stream(request: Request, reply: Reply, n: int) -> list[bytes]:
    items = _responses_items(request, reply, n)
    seq = itertools.count()
    events: list[bytes] = []

    def emit(kind: str, **data: Any) -> None:
        events.append(_sse({"type": kind, "sequence_number": next(seq), **data}, kind))

    emit("response.created", response=_responses_object(request, n, "in_progress", []))
    emit("response.in_progress", response=_responses_object(request, n, "in_progress", []))
    for index, item in enumerate(items):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            emit(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
            for piece in _pieces(text):
                emit(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                )
            emit(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
            )
            emit(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part={**part, "text": text},
            )
        else:
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            emit(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=index,
                delta=item["arguments"],
            )
            emit(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=item["arguments"],
            )
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=_responses_object(request, n, "completed", items))
    return events


def _responses_complete(request: Request, reply: Reply, n: int) -> dict[str, Any]:
    return _responses_object(request, n, "completed", _responses_items(request, reply, n))


def _chat_chunk(request: Request, n: int, **fields: Any) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake{n:06d}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": request.model or "fake-model",
        **fields,
    }


def _chat_usage() -> dict[str, int]:
    return {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _chat_stream(request: Request, reply: Reply, n: int) -> list[bytes]:
    text = reply.content

    def choice(delta: dict[str, Any], finish: str | None = None) -> bytes:
        chunk = _chat_chunk(
            request, n, choices=[{"index": 0, "delta": delta, "finish_reason": finish}]
        )
        return _sse(chunk)

    events = [choice({"role": "assistant", "content": ""})]
    if text or reply.kind == "text":
        events.extend(choice({"content": piece}) for piece in _pieces(text))
    if reply.kind == "tool":
        call = {
            "index": 0,
            "id": request.call_id,
            "type": "function",
            "function": {"name": reply.tool_name, "arguments": ""},
        }
        events.append(choice({"tool_calls": [call]}))
        events.extend(
            choice({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in _pieces(json.dumps(reply.arguments), 24)
        )
    events.append(choice({}, "tool_calls" if reply.kind == "tool" else "stop"))
    events.append(_sse(_chat_chunk(request, n, choices=[], usage=_chat_usage())))
    events.append(b"data: [DONE]\n\n")
    return events


def _chat_complete(request: Request, reply: Reply, n: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.kind == "tool":
        message["tool_calls"] = [
            {
                "id": request.call_id,
                "type": "function",
                "function": {"name": reply.tool_name, "arguments": json.dumps(reply.arguments)},
            }
        ]
    return {
        "id": f"chatcmpl-fake{n:06d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model or "fake-model",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.kind == "tool" else "stop",
            }
        ],
        "usage": _chat_usage(),
    }


def _api(path: str) -> Api | None:
    """Which API a request path belongs to, or None for an unknown endpoint."""
    path = path.rstrip("/")
    route = GEMINI_ROUTE.fullmatch(path)
    if route is not None:
        return "gemini" if route["method"] in GEMINI_METHODS else None
    return ROUTES.get(path)


def _gemini_parts(body: dict[str, Any], role: str) -> Iterator[dict[str, Any]]:
    """Every part of every ``role`` content in a Gemini request, oldest first."""
    for content in body.get("contents") or []:
        if isinstance(content, dict) and content.get("role") == role:
            yield from (p for p in content.get("parts") or [] if isinstance(p, dict))


def _gemini_candidate(parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return candidate


def _gemini_response(
    request: Request, n: int, parts: list[dict[str, Any]], finish: str | None
) -> dict[str, Any]:
    response: dict[str, Any] = {
        "candidates": [_gemini_candidate(parts, finish)],
        "modelVersion": request.model or "fake-model",
        "responseId": f"resp-fake{n:06d}",
    }
    if finish is not None:
        response["usageMetadata"] = {
            "promptTokenCount": 10,
            "candidatesTokenCount": 5,
            "totalTokenCount": 15,
        }
    return response


def _gemini_call(request: Request, reply: Reply) -> dict[str, Any]:
    return {
        "functionCall": {"id": request.call_id, "name": reply.tool_name, "args": reply.arguments}
    }


def _gemini_stream(request: Request, reply: Reply, n: int) -> list[bytes]:
    """Text in a few chunks, then the function call; the last chunk has the finish
    reason and usage (Gemini CLI retries a stream that ends without a finish reason)."""
    chunks: list[list[dict[str, Any]]] = []
    if reply.content or reply.kind == "text":
        chunks.extend([{"text": piece}] for piece in _pieces(reply.content))
    if reply.kind == "tool":
        chunks.append([_gemini_call(request, reply)])
    last = len(chunks) - 1
    return [
        _sse(_gemini_response(request, n, parts, "STOP" if i == last else None))
        for i, parts in enumerate(chunks)
    ]


def _gemini_complete(request: Request, reply: Reply, n: int) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if reply.content or reply.kind == "text":
        parts.append({"text": reply.content})
    if reply.kind == "tool":
        parts.append(_gemini_call(request, reply))
    return _gemini_response(request, n, parts, "STOP")


_STREAMERS: dict[Api, Callable[[Request, Reply, int], list[bytes]]] = {
    "anthropic": _anthropic_stream,
    "responses": _responses_stream,
    "chat": _chat_stream,
    "gemini": _gemini_stream,
}
_COMPLETERS: dict[Api, Callable[[Request, Reply, int], dict[str, Any]]] = {
    "anthropic": _anthropic_complete,
    "responses": _responses_complete,
    "chat": _chat_complete,
    "gemini": _gemini_complete,
}
