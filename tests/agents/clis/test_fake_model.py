"""The fake model server, driven by a real HTTP client (``http.client`` in a thread).

The agents are strict about wire framing, so these tests read the raw responses: SSE
``event:``/``data:`` lines, chunked transfer encoding, the order of events per API, tool
call ids and argument streaming, error bodies, and what counts as unexpected.
"""

from __future__ import annotations

import asyncio
import gzip
import http.client
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.agents.clis.fake_model import ASK_TOOLS, SHELL_TOOLS, FakeModelServer, Reply, ToolResult

pytestmark = pytest.mark.anyio

ANTHROPIC_TOOLS = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
RESPONSES_TOOLS = [{"type": "function", "name": "exec_command", "parameters": {}}]
CHAT_TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {}}}]


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Event:
    event: str | None
    data: str

    def json(self) -> Any:
        return json.loads(self.data)


def _exchange(
    port: int,
    requests: list[tuple[str, str, bytes | None, dict[str, str]]],
) -> list[Response]:
    """Send requests one after another over one keep-alive connection."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    responses = []
    try:
        for method, path, body, headers in requests:
            connection.request(method, path, body=body, headers=headers)
            reply = connection.getresponse()
            responses.append(
                Response(reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read())
            )
    finally:
        connection.close()
    return responses


async def post(server: FakeModelServer, path: str, body: dict[str, Any]) -> Response:
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    [response] = await asyncio.to_thread(_exchange, server.port, [("POST", path, data, headers)])
    return response


def sse(response: Response) -> list[Event]:
    """Parse an event stream strictly: blank-line separated, only event:/data: fields."""
    assert response.status == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["transfer-encoding"] == "chunked"
    text = response.body.decode()
    assert text.endswith("\n\n")
    events = []
    for block in text[:-2].split("\n\n"):
        event, data = None, []
        for line in block.split("\n"):
            field, _, value = line.partition(": ")
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)
            else:
                raise AssertionError(f"unexpected SSE line {line!r}")
        events.append(Event(event, "\n".join(data)))
    return events


@pytest.fixture
async def server() -> AsyncIterator[FakeModelServer]:
    async with FakeModelServer() as running:
        yield running


# -- Anthropic Messages -------------------------------------------------------------------


async def test_anthropic_text_stream(server: FakeModelServer) -> None:
    server.script(Reply.text("Hello from the fake model, streamed in pieces."))
    body = {"model": "m", "stream": True, "tools": ANTHROPIC_TOOLS, "messages": []}
    events = sse(await post(server, "/v1/messages?beta=true", body))
    names = [e.event for e in events]
    assert names[0] == "message_start"
    assert names[-2:] == ["message_delta", "message_stop"]
    assert names[1:3] == ["content_block_start", "ping"]
    for event in events:
        assert event.json()["type"] == event.event  # the event line names the data's type
    deltas = [e.json()["delta"] for e in events if e.event == "content_block_delta"]
    assert len(deltas) > 1
    assert "".join(d["text"] for d in deltas) == "Hello from the fake model, streamed in pieces."
    assert events[-2].json()["delta"]["stop_reason"] == "end_turn"
    [request] = server.requests
    assert request.api == "anthropic" and request.outcome == "scripted"
    assert request.query == {"beta": ["true"]}
    assert server.pending == 0


async def test_anthropic_tool_use_and_result(server: FakeModelServer) -> None:
    server.script(Reply.tool("Bash", {"command": "echo hi", "description": "Say hi"}, text="Ok."))
    body = {"model": "m", "stream": True, "tools": ANTHROPIC_TOOLS, "messages": []}
    events = sse(await post(server, "/v1/messages", body))
    starts = [e.json()["content_block"] for e in events if e.event == "content_block_start"]
    assert [s["type"] for s in starts] == ["text", "tool_use"]
    call_id = server.requests[0].call_id
    assert call_id is not None and call_id.startswith("toolu_")
    assert starts[1] == {"type": "tool_use", "id": call_id, "name": "Bash", "input": {}}
    partial = "".join(
        e.json()["delta"]["partial_json"]
        for e in events
        if e.event == "content_block_delta" and e.json()["index"] == 1
    )
    assert json.loads(partial) == {"command": "echo hi", "description": "Say hi"}
    stop = next(e.json() for e in events if e.event == "message_delta")
    assert stop["delta"]["stop_reason"] == "tool_use"

    server.script(Reply.text("done"))
    result = {"type": "tool_result", "tool_use_id": call_id, "content": "hi\n"}
    messages = [
        {"role": "user", "content": "go"},
        {"role": "user", "content": [result, {"type": "text", "text": "and then?"}]},
    ]
    await post(server, "/v1/messages", {**body, "messages": messages})
    second = server.requests[1]
    found = second.tool_result(call_id)
    assert found is not None and found.output == "hi\n" and not found.is_error
    assert second.user_texts() == ["go", "and then?"]


async def test_anthropic_not_streaming(server: FakeModelServer) -> None:
    server.script(Reply.tool("Bash", {"command": "ls"}))
    response = await post(server, "/v1/messages", {"model": "m", "tools": ANTHROPIC_TOOLS})
    assert response.status == 200
    message = response.json()
    assert message["type"] == "message" and message["stop_reason"] == "tool_use"
    assert message["content"] == [
        {
            "type": "tool_use",
            "id": server.requests[0].call_id,
            "name": "Bash",
            "input": {"command": "ls"},
        }
    ]


# -- OpenAI Responses -----------------------------------------------------------------------


async def test_responses_text_stream(server: FakeModelServer) -> None:
    server.script(Reply.text("Hello from Responses, in several deltas."))
    body = {"model": "m", "stream": True, "tools": RESPONSES_TOOLS, "input": []}
    events = sse(await post(server, "/v1/responses", body))
    names = [e.event for e in events]
    assert names[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert names[-2:] == ["response.output_item.done", "response.completed"]
    payloads = [e.json() for e in events]
    assert [p["type"] for p in payloads] == names
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    text = "".join(p["delta"] for p in payloads if p["type"] == "response.output_text.delta")
    assert text == "Hello from Responses, in several deltas."
    done = payloads[-2]["item"]
    assert done["type"] == "message" and done["content"][0]["text"] == text
    completed = payloads[-1]["response"]
    assert completed["status"] == "completed" and completed["usage"]["total_tokens"] > 0


async def test_responses_function_call_and_output(server: FakeModelServer) -> None:
    server.script(Reply.shell("codex", "touch x", description="Create x?"))
    body = {"model": "m", "stream": True, "tools": RESPONSES_TOOLS, "input": []}
    events = sse(await post(server, "/v1/responses", body))
    item = next(e.json()["item"] for e in events if e.event == "response.output_item.done")
    call_id = server.requests[0].call_id
    assert item["type"] == "function_call" and item["name"] == "exec_command"
    assert item["call_id"] == call_id
    assert json.loads(item["arguments"]) == {
        "cmd": "touch x",
        "sandbox_permissions": "require_escalated",
        "justification": "Create x?",
    }
    assert events[-1].json()["response"]["output"] == [item]

    server.script(Reply.text("ok"))
    output = {"type": "function_call_output", "call_id": call_id, "output": "Output:\nfine"}
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    await post(server, "/v1/responses", {**body, "input": [user, item, output]})
    found = server.requests[1].tool_result(call_id or "")
    assert found is not None and found.output == "Output:\nfine"
    assert server.requests[1].user_texts() == ["go"]


async def test_side_request_with_json_schema_gets_matching_json(server: FakeModelServer) -> None:
    """Codex titles a thread with a tool-less request asking for ``{"title": ...}``."""
    schema = {
        "type": "object",
        "properties": {"title": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["title", "n"],
    }
    body = {
        "model": "m",
        "stream": True,
        "tools": [],
        "input": [],
        "text": {"format": {"type": "json_schema", "name": "t", "schema": schema}},
    }
    events = sse(await post(server, "/v1/responses", body))
    item = next(e.json()["item"] for e in events if e.event == "response.output_item.done")
    assert json.loads(item["content"][0]["text"]) == {"title": "Fake title", "n": 0}
    assert server.requests[0].outcome == "side"


# -- OpenAI Chat Completions ----------------------------------------------------------------


async def test_chat_text_stream(server: FakeModelServer) -> None:
    server.script(Reply.text("Hello from chat completions!"))
    body = {"model": "m", "stream": True, "tools": CHAT_TOOLS, "messages": []}
    events = sse(await post(server, "/v1/chat/completions", body))
    assert all(e.event is None for e in events)  # data-only stream
    assert events[-1].data == "[DONE]"
    chunks = [e.json() for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == "Hello from chat completions!"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0


async def test_chat_tool_call_and_result(server: FakeModelServer) -> None:
    server.script(Reply.shell("opencode", "ls -la", description="List"))
    body = {"model": "m", "stream": True, "tools": CHAT_TOOLS, "messages": []}
    events = sse(await post(server, "/v1/chat/completions", body))
    chunks = [e.json() for e in events[:-1]]
    calls = [
        call
        for c in chunks
        if c["choices"]
        for call in c["choices"][0]["delta"].get("tool_calls", [])
    ]
    call_id = server.requests[0].call_id
    assert calls[0]["id"] == call_id and calls[0]["type"] == "function"
    assert calls[0]["function"]["name"] == "bash"
    assert all(c["index"] == 0 for c in calls)
    arguments = "".join(c["function"]["arguments"] for c in calls)
    assert json.loads(arguments) == {"command": "ls -la", "description": "List"}
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"

    server.script(Reply.text("ok"))
    messages = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": None, "tool_calls": calls[:1]},
        {"role": "tool", "tool_call_id": call_id, "content": [{"type": "text", "text": "a b"}]},
    ]
    await post(server, "/v1/chat/completions", {**body, "messages": messages})
    found = server.requests[1].tool_result(call_id or "")
    assert found is not None and found.output == "a b"


async def test_chat_not_streaming(server: FakeModelServer) -> None:
    server.script(Reply.text("plain"))
    response = await post(server, "/v1/chat/completions", {"model": "m", "tools": CHAT_TOOLS})
    completion = response.json()
    assert completion["object"] == "chat.completion"
    assert completion["choices"][0]["message"] == {"role": "assistant", "content": "plain"}


# -- Gemini generateContent ----------------------------------------------------------------

GEMINI_TOOLS = [{"functionDeclarations": [{"name": "run_shell_command", "parameters": {}}]}]
GEMINI_STREAM = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"


async def test_gemini_text_stream(server: FakeModelServer) -> None:
    server.script(Reply.text("Hello from the fake Gemini"))
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": GEMINI_TOOLS}
    events = sse(await post(server, GEMINI_STREAM, body))
    assert all(e.event is None for e in events)  # data: lines only
    chunks = [e.json() for e in events]
    texts = [c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks]
    assert "".join(texts) == "Hello from the fake Gemini" and len(chunks) > 1
    assert all(c["candidates"][0]["content"]["role"] == "model" for c in chunks)
    assert [c["candidates"][0].get("finishReason") for c in chunks][-2:] == [None, "STOP"]
    assert "usageMetadata" in chunks[-1]
    request = server.requests[0]
    assert (request.api, request.model, request.streaming) == ("gemini", "gemini-2.5-flash", True)
    assert request.tool_names == ["run_shell_command"] and request.user_texts() == ["hi"]


async def test_gemini_function_call_and_response(server: FakeModelServer) -> None:
    server.script(Reply.shell("gemini-cli", "ls -la", description="List"))
    prompt = {"role": "user", "parts": [{"text": "list"}]}
    body: dict[str, Any] = {"contents": [prompt], "tools": GEMINI_TOOLS}
    [chunk] = [e.json() for e in sse(await post(server, GEMINI_STREAM, body))]
    [part] = chunk["candidates"][0]["content"]["parts"]
    call_id = server.requests[0].call_id
    assert part == {
        "functionCall": {
            "id": call_id,
            "name": "run_shell_command",
            "args": {"command": "ls -la", "description": "List"},
        }
    }
    assert chunk["candidates"][0]["finishReason"] == "STOP"

    server.script(Reply.text("ok"))
    response = {"id": call_id, "name": "run_shell_command", "response": {"output": "a b"}}
    contents = [
        prompt,
        {"role": "model", "parts": [part]},
        {"role": "user", "parts": [{"functionResponse": response}]},
    ]
    await post(server, GEMINI_STREAM, {**body, "contents": contents})
    found = server.requests[1].tool_result(call_id or "")
    assert found == ToolResult(call_id or "", "a b", False)
    assert server.requests[1].user_texts() == ["list"]  # a function response is no text


async def test_gemini_not_streaming_and_side_requests(server: FakeModelServer) -> None:
    server.script(Reply.text("plain"))
    path = "/v1beta/models/gemini-2.5-flash:generateContent"
    response = (await post(server, path, {"contents": [], "tools": GEMINI_TOOLS})).json()
    assert response["candidates"][0]["content"]["parts"] == [{"text": "plain"}]
    assert response["candidates"][0]["finishReason"] == "STOP"
    schema = {"type": "object", "properties": {"score": {"type": "integer"}}}
    side = await post(
        server, path, {"contents": [], "generationConfig": {"responseJsonSchema": schema}}
    )
    text = side.json()["candidates"][0]["content"]["parts"][0]["text"]
    assert json.loads(text) == {"score": 0}
    unknown = await post(server, "/v1beta/models/gemini-2.5-flash:countTokens", {})
    assert unknown.status == 500 and server.unexpected[-1].problem == "unknown endpoint"


# -- side requests, errors, the unexpected ------------------------------------------------


async def test_side_requests_do_not_consume_the_script(server: FakeModelServer) -> None:
    server.script(Reply.text("scripted"))
    title = sse(await post(server, "/v1/chat/completions", {"stream": True, "messages": []}))
    assert "Fake title" in "".join(e.data for e in title)
    assert server.pending == 1
    main = sse(await post(server, "/v1/chat/completions", {"stream": True, "tools": CHAT_TOOLS}))
    assert "scripted" in "".join(e.data for e in main)
    assert [r.outcome for r in server.requests] == ["side", "scripted"]
    server.assert_no_unexpected()


@pytest.mark.parametrize(
    ("path", "tools", "expected"),
    [
        (
            "/v1/messages",
            ANTHROPIC_TOOLS,
            {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}},
        ),
        (
            "/v1/chat/completions",
            CHAT_TOOLS,
            {
                "error": {
                    "message": "bad",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            },
        ),
        (
            "/v1/responses",
            RESPONSES_TOOLS,
            {
                "error": {
                    "message": "bad",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            },
        ),
        (
            GEMINI_STREAM,
            GEMINI_TOOLS,
            {"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}},
        ),
    ],
)
async def test_error_reply_uses_the_provider_body(
    server: FakeModelServer, path: str, tools: list[Any], expected: dict[str, Any]
) -> None:
    server.script(Reply.error(400, "bad"))
    response = await post(server, path, {"stream": True, "tools": tools})
    assert response.status == 400
    assert response.headers["content-type"] == "application/json"
    assert response.json() == expected
    assert server.requests[0].outcome == "scripted"
    server.assert_no_unexpected()


async def test_error_reply_repeats_for_retries(server: FakeModelServer) -> None:
    server.script(Reply.error(529, "busy", times=2), Reply.text("finally"))
    body = {"stream": True, "tools": ANTHROPIC_TOOLS}
    statuses = [(await post(server, "/v1/messages", body)).status for _ in range(3)]
    assert statuses == [529, 529, 200]
    first = await post(server, "/v1/messages", body)  # the script is empty now
    assert first.status == 500
    assert [r.problem for r in server.unexpected] == ["script empty"]


async def test_unexpected_requests_fail_the_test(server: FakeModelServer) -> None:
    unknown = await post(server, "/v1/models/list", {})
    assert unknown.status == 500
    empty = await post(server, "/v1/messages", {"stream": True, "tools": ANTHROPIC_TOOLS})
    assert empty.status == 500
    assert empty.json()["error"]["type"] == "api_error"
    [not_json] = await asyncio.to_thread(
        _exchange, server.port, [("POST", "/v1/responses", b"{nope", {})]
    )
    assert not_json.status == 500
    assert [r.problem for r in server.unexpected] == [
        "unknown endpoint",
        "script empty",
        "bad body: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
    ]
    with pytest.raises(AssertionError, match="3 unexpected request"):
        server.assert_no_unexpected()


async def test_health_probes_are_recorded_and_harmless(server: FakeModelServer) -> None:
    head, get = await asyncio.to_thread(
        _exchange, server.port, [("HEAD", "/", None, {}), ("GET", "/", None, {})]
    )
    assert head.status == 200 and head.body == b""
    assert get.status == 200 and get.body == b"fake model server\n"
    assert [r.outcome for r in server.requests] == ["probe", "probe"]
    server.assert_no_unexpected()


async def test_keep_alive_chunked_and_gzip_request_bodies(server: FakeModelServer) -> None:
    server.script(Reply.text("one"), Reply.text("two"))
    body = json.dumps({"tools": CHAT_TOOLS, "messages": [{"role": "user", "content": "hi"}]})

    def send() -> list[Response]:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        try:
            connection.request(
                "POST",
                "/v1/chat/completions",
                body=iter([body[:10].encode(), body[10:].encode()]),
                headers={"Transfer-Encoding": "chunked"},
                encode_chunked=True,
            )
            first = connection.getresponse()
            one = Response(first.status, {}, first.read())
            connection.request(
                "POST",
                "/v1/chat/completions",
                body=gzip.compress(body.encode()),
                headers={"Content-Encoding": "gzip"},
            )
            second = connection.getresponse()
            return [one, Response(second.status, {}, second.read())]
        finally:
            connection.close()

    one, two = await asyncio.to_thread(send)
    assert json.loads(one.body)["choices"][0]["message"]["content"] == "one"
    assert json.loads(two.body)["choices"][0]["message"]["content"] == "two"
    assert all(r.user_texts() == ["hi"] for r in server.requests)


async def test_malformed_http_is_answered_400(server: FakeModelServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"NONSENSE\r\n\r\n")
    await writer.drain()
    reply = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    await writer.wait_closed()
    assert reply.startswith(b"HTTP/1.1 400 ")
    assert server.requests == []


async def test_wait_for_request(server: FakeModelServer) -> None:
    server.script(Reply.text("late"))
    body = {"tools": ANTHROPIC_TOOLS, "messages": [{"role": "user", "content": "ping"}]}

    async def later() -> None:
        await asyncio.sleep(0.2)
        await post(server, "/v1/messages", body)

    task = asyncio.create_task(later())
    request = await server.wait_for_request(lambda r: "ping" in r.user_texts(), wait=5)
    await task
    assert request.index == 0 and request.reply == Reply.text("late")
    with pytest.raises(AssertionError, match=r"within 0.2 s; seen:\n  #0 POST /v1/messages"):
        await server.wait_for_request(since=1, wait=0.2)


def test_reply_builders_match_each_agents_tools() -> None:
    assert Reply.shell("claude-code", "ls").arguments == {
        "command": "ls",
        "description": "Run a command",
    }
    assert Reply.shell("pi", "ls").arguments == {"command": "ls"}
    assert {a: Reply.shell(a, "ls").tool_name for a in SHELL_TOOLS} == SHELL_TOOLS
    claude = Reply.ask("claude-code", "Which?", ["A", "B"]).arguments["questions"][0]
    assert claude["multiSelect"] is False and claude["options"][1]["label"] == "B"
    codex = Reply.ask("codex", "Which?", ["A", "B"])
    assert codex.tool_name == ASK_TOOLS["codex"] and codex.arguments["questions"][0]["id"] == "q0"
    assert Reply.ask("opencode", "Which?", ["A"]).tool_name == "question"
    with pytest.raises(ValueError, match="no ask tool"):
        Reply.ask("pi", "Which?", ["A"])
    with pytest.raises(ValueError, match="4xx or 5xx"):
        Reply.error(200, "fine")
