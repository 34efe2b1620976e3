"""MkDocs hook: the wire protocol's reference page, written at every build from the
JSON Schema that ``ptyvisor schema`` prints (``wire.protocol.wire_schema``), with the
field types the TypeScript generator gives them (``wire.typescript``). The models are
the one source, so the page cannot say what the server does not do."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from ptyvisor.wire.protocol import PROTOCOL_VERSION, wire_schema
from ptyvisor.wire.typescript import type_expression

PAGE = "protocol-reference.md"
SIDES = {"client_to_server": "Client → server", "server_to_client": "Server → client"}


def on_files(files: Files, config: MkDocsConfig) -> Files:
    files.append(File.generated(config, PAGE, content=reference()))
    return files


def reference() -> str:
    schema = wire_schema()
    out = [
        "# Wire protocol reference",
        "",
        f"Protocol version {PROTOCOL_VERSION}. Every message, generated from the JSON Schema",
        "that `ptyvisor schema` prints; types are those of `ptyvisor schema --typescript`.",
        "How the messages are used — connecting, replay, flow control, sizes — is in",
        "[Wire protocol](protocol.md). A field marked *optional* may be left out of what a",
        "client sends (its default is given); the server always sends every field.",
        "",
    ]
    shared: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for side, title in SIDES.items():
        defs: Mapping[str, Any] = schema[side]["$defs"]
        messages = [ref_name(member["$ref"]) for member in schema[side]["oneOf"]]
        out += [f"## {title}", ""]
        for name in messages:
            model = defs[name]
            kind = model["properties"]["type"]["const"]
            out += [f"### `{kind}`", "", *model_text(model, defs)]
        for name in sorted(set(defs) - set(messages)):
            shared.setdefault(name, (side, defs))
    out += ["## Shared types", ""]
    for name, (_side, defs) in sorted(shared.items()):
        out += [f"### {name}", "", *model_text(defs[name], defs)]
    return "\n".join(out) + "\n"


def model_text(model: Mapping[str, Any], defs: Mapping[str, Any]) -> Iterator[str]:
    if "description" in model:
        yield prose(model["description"])
        yield ""
    properties: Mapping[str, Any] = model.get("properties", {})
    if not properties:
        # An enum or another type without fields.
        yield f"`{one_line(type_expression(model, defs))}`"
        yield ""
        return
    required = set(model.get("required", ()))
    # A message's `type` is its heading.
    rows = [(field, spec) for field, spec in properties.items() if "const" not in spec]
    if not rows:
        yield "No fields but `type`."
        yield ""
        return
    yield "| field | type | needed | description |"
    yield "| --- | --- | --- | --- |"
    for field, spec in rows:
        kind = cell(f"`{one_line(type_expression(spec, defs))}`")
        if field in required:
            need = "required"
        elif "default" in spec:
            need = cell(f"optional (`{default_text(spec['default'])}`)")
        else:
            need = "optional"
        yield f"| `{field}` | {kind} | {need} | {cell(prose(spec.get('description', '')))} |"
    yield ""


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def default_text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return one_line(repr(value))


def outside_code(text: str, *replacements: tuple[str, str]) -> str:
    """``text`` with each replacement made outside its `code` spans."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        for old, new in replacements:
            parts[i] = parts[i].replace(old, new)
    return "`".join(parts)


def prose(text: str) -> str:
    """A docstring as Markdown: reST's ``code`` as `code`, and ``<`` outside code
    shown as text rather than taken for HTML."""
    return outside_code(text.replace("``", "`"), ("<", "&lt;"), (">", "&gt;"))


def cell(text: str) -> str:
    """Text that stays in one table cell: one line, a ``|`` outside code escaped
    (inside code, the table extension does not split at it)."""
    return outside_code(one_line(text), ("|", "\\|"))
