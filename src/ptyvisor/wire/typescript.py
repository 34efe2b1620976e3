"""TypeScript declarations (a ``.d.ts``) of the wire protocol, from its JSON Schema.

``ptyvisor schema --typescript`` prints them for the web and Electron clients: every
model in the schema's ``$defs`` becomes an exported ``interface`` (or a ``type`` when
it is a union, an enum or a record), and ``ClientMessage`` / ``ServerMessage`` are
the unions of what each side sends, discriminated by ``type`` as on the wire.

Server → client messages are typed as sent: the server writes every field of a
message (``model_dump_json`` leaves nothing out), so a field with a default is
required there, while a client may leave defaulted fields out of what it sends.

Stdlib only. The generator reads the JSON Schema subset pydantic writes and raises
:class:`SchemaError` for any shape it does not translate, rather than weakening a
type to ``any``; only a free-form schema (``{}``) becomes ``unknown``.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

COMMAND = "ptyvisor schema --typescript"
"""The command named in the generated file's header."""

WIDTH = 100
"""Unions longer than this go one member a line; JSDoc text is wrapped to it."""

_IGNORED = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
        "format",
        "pattern",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "contentEncoding",
        "contentMediaType",
    }
)
"""Keywords that annotate or constrain a value without changing its TypeScript type."""

_OBJECT_KEYWORDS = frozenset({"properties", "required", "additionalProperties"})
_ARRAY_KEYWORDS = frozenset({"items", "prefixItems"})
_COMBINATORS = ("$ref", "allOf", "anyOf", "oneOf")
_STRUCTURAL = frozenset(
    {*_COMBINATORS, "discriminator", "const", "enum", "type", *_OBJECT_KEYWORDS, *_ARRAY_KEYWORDS}
)
_PRIMITIVES = {
    "string": "string",
    "integer": "number",
    "number": "number",
    "boolean": "boolean",
    "null": "null",
}

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_RESERVED = frozenset([
    "abstract", "any", "as", "asserts", "async", "await", "bigint", "boolean", "break",
    "case", "catch", "class", "const", "constructor", "continue", "debugger", "declare",
    "default", "delete", "do", "else", "enum", "export", "extends", "false", "finally",
    "for", "from", "function", "get", "global", "if", "implements", "import", "in",
    "infer", "instanceof", "interface", "is", "keyof", "let", "module", "namespace",
    "never", "new", "null", "number", "object", "of", "package", "private", "protected",
    "public", "readonly", "require", "return", "satisfies", "set", "static", "string",
    "super", "switch", "symbol", "this", "throw", "true", "try", "type", "typeof",
    "undefined", "unique", "unknown", "var", "void", "while", "with", "yield",
])  # fmt: skip
"""Words a declared type's name may not be (keywords and the built-in type names)."""

_TOP_LEVEL = {
    "client_to_server": (
        "ClientMessage",
        "A text message a client sends; ``type`` tells which.",
    ),
    "server_to_client": (
        "ServerMessage",
        "A text message the server sends; ``type`` tells which (switch on it to narrow).",
    ),
}
_VERSION_NAME = "PROTOCOL_VERSION"
_FREE_FORM = "{}"
"""The type list of a schema with no type keywords at all: any JSON value."""


class SchemaError(ValueError):
    """A schema shape the generator does not translate (it never falls back to ``any``)."""


def wire_typescript() -> str:
    """The ``.d.ts`` of ptyvisor's protocol, as ``ptyvisor schema --typescript`` prints it.

    The server's side comes from pydantic's serialization-mode schema (what the server
    writes, not what it would accept), with every field required: see the module doc.
    """
    # Imported here so that the generator itself needs nothing but the stdlib.
    from ptyvisor.wire.protocol import SERVER_MESSAGE, wire_schema

    wire = wire_schema()
    wire["server_to_client"] = SERVER_MESSAGE.json_schema(mode="serialization")
    return render(wire)


def render(
    wire: Mapping[str, Any], *, command: str = COMMAND, server_sends_every_field: bool = True
) -> str:
    """A ``.d.ts`` of ``wire``, shaped as ``protocol.wire_schema()``: ``protocol`` (the
    version) and the ``client_to_server`` and ``server_to_client`` JSON Schemas.

    ``server_sends_every_field``: every property of a server → client model is
    required, defaulted or not (the server never leaves one out).
    """
    version = wire.get("protocol")
    if isinstance(version, bool) or not isinstance(version, int | str):
        raise SchemaError(f"protocol: the version must be an integer or string, not {version!r}")
    roots: dict[str, Mapping[str, Any]] = {}
    for side in _TOP_LEVEL:
        root = wire.get(side)
        if not isinstance(root, Mapping):
            raise SchemaError(f"{side}: missing, or not a JSON Schema object")
        roots[side] = root
    names = _declared_names(roots)

    out = [
        f"// Generated by `{command}` from the JSON Schema of ptyvisor's WebSocket\n"
        f"// protocol, version {json.dumps(version)}. Do not edit: generate it again.\n"
    ]
    out.append(
        _jsdoc(["The protocol version these declarations describe (`hello.protocol`)."], "")
        + f"export type {_VERSION_NAME} = {_literal(version, 'protocol')};\n"
    )
    sections: list[tuple[str, dict[str, str]]] = []
    declared: dict[str, tuple[str, str]] = {}  # TS name -> (its text, the side it is in)
    for side, root in roots.items():
        defs = _defs(root, side)
        renderer = _Renderer(
            defs, names, side, sent_in_full=server_sends_every_field and side == "server_to_client"
        )
        top_name, top_doc = _TOP_LEVEL[side]
        body = {key: value for key, value in root.items() if key != "$defs"}
        rendered = renderer.type_of(body, f"{side}#", "")
        description = body.get("description")
        out.append(
            _jsdoc(_doc_lines(description if isinstance(description, str) else top_doc), "")
            + _assign(f"export type {top_name} = ", rendered, ";", "")
        )
        section: dict[str, str] = {}
        for name, schema in defs.items():
            text = renderer.declaration(name, schema)
            ts_name = names[name]
            if ts_name in declared:
                if declared[ts_name][0] != text:
                    raise SchemaError(
                        f"{side}#/$defs/{name}: also in {declared[ts_name][1]}'s $defs with "
                        "another shape (a model used in both directions must have no "
                        "defaulted fields, or a name of its own on each side)"
                    )
                continue
            declared[ts_name] = (text, side)
            section[ts_name] = text
        sections.append((side, section))
    for side, section in sections:
        if section:
            arrow = "Client → server" if side == "client_to_server" else "Server → client"
            out.append(f"// {'-' * 70} {arrow}\n")
            out.extend(section[ts_name] for ts_name in sorted(section))
    return "\n".join(out)


def type_expression(schema: Any, defs: Mapping[str, Any] | None = None) -> str:
    """The TypeScript type of one schema (``$ref`` names resolved against ``defs``)."""
    defs = dict(defs or {})
    renderer = _Renderer(defs, {name: _identifier(name) for name in defs}, "#", sent_in_full=False)
    return renderer.type_of(schema, "#", "").text


# --------------------------------------------------------------------------- rendering


@dataclass(frozen=True)
class _Type:
    text: str
    members: tuple[str, ...] = ()
    """The members' texts when this is a union (then ``text`` joins them with ``|``)."""


def _union(types: Iterable[_Type]) -> _Type:
    members: list[str] = []
    for member in types:
        for text in member.members or (member.text,):
            if text not in members and text != "never":
                members.append(text)
    if "null" in members:  # reads as "T | null"
        members.remove("null")
        members.append("null")
    if not members:
        return _Type("never")
    if len(members) == 1:
        return _Type(members[0])
    return _Type(" | ".join(members), tuple(members))


def _array_of(element: _Type) -> str:
    return f"({element.text})[]" if element.members else f"{element.text}[]"


def _assign(prefix: str, value: _Type, suffix: str, indent: str) -> str:
    """``prefix value suffix`` as a line; a long union goes one member a line."""
    line = f"{prefix}{value.text}{suffix}"
    if len(line) <= WIDTH or not value.members or any("\n" in m for m in value.members):
        return line + "\n"
    *first, last = value.members
    members = "".join(f"{indent}  | {member}\n" for member in first)
    return f"{prefix.rstrip()}\n{members}{indent}  | {last}{suffix}\n"


class _Renderer:
    """Types of one side's schemas: its ``$defs`` and whether it sends every field."""

    def __init__(
        self, defs: Mapping[str, Any], names: Mapping[str, str], side: str, *, sent_in_full: bool
    ) -> None:
        self.defs = defs
        self.names = names
        self.side = side
        self.sent_in_full = sent_in_full

    def declaration(self, name: str, schema: Any) -> str:
        """``export interface``/``export type`` of the model ``$defs[name]``, with its doc."""
        path = f"{self.side}#/$defs/{_pointer(name)}"
        ts_name = self.names[name]
        description = schema.get("description") if isinstance(schema, Mapping) else None
        doc = _jsdoc(_doc_lines(description) if isinstance(description, str) else [], "")
        if self._is_interface(schema):
            self._check_keywords(schema, path)
            self._check_type(schema, path, ["object"])
            body = "".join(self._members(schema, path, "  "))
            return f"{doc}export interface {ts_name} {{\n{body}}}\n"
        return doc + _assign(f"export type {ts_name} = ", self.type_of(schema, path, ""), ";", "")

    @staticmethod
    def _is_interface(schema: Any) -> bool:
        return (
            isinstance(schema, Mapping)
            and bool(schema.get("properties"))
            and schema.get("type", "object") == "object"
            and not any(key in schema for key in (*_COMBINATORS, "const", "enum"))
        )

    def type_of(self, schema: Any, path: str, indent: str) -> _Type:
        """The type of ``schema``; ``indent`` is that of the line it starts on."""
        if schema is True:
            return _Type("unknown")
        if schema is False:
            return _Type("never")
        if not isinstance(schema, Mapping):
            raise SchemaError(
                f"{path}: a schema is an object or a boolean, not {type(schema).__name__}"
            )
        self._check_keywords(schema, path)
        if "$ref" in schema:
            self._alone(schema, "$ref", path)
            return _Type(self._ref(schema["$ref"], path))
        if "allOf" in schema:
            self._alone(schema, "allOf", path)
            members = schema["allOf"]
            if not isinstance(members, list) or len(members) != 1:
                raise SchemaError(
                    f"{path}: allOf with other than one member (intersections are not translated)"
                )
            return self.type_of(members[0], f"{path}/allOf/0", indent)
        for key in ("anyOf", "oneOf"):
            if key in schema:
                self._alone(schema, key, path, also={"discriminator"})
                return self._union_of(schema, key, path, indent)
        if "discriminator" in schema:
            raise SchemaError(f"{path}: discriminator without oneOf or anyOf")
        if "const" in schema or "enum" in schema:
            return self._literals(schema, path)
        types = self._check_type(schema, path, None)
        return _union(self._typed(kind, schema, path, indent) for kind in types)

    # ----------------------------------------------------------------- checks

    @staticmethod
    def _check_keywords(schema: Mapping[str, Any], path: str) -> None:
        unknown = sorted(str(key) for key in schema if key not in _STRUCTURAL | _IGNORED)
        if unknown:
            raise SchemaError(
                f"{path}: unsupported JSON Schema keyword(s) {', '.join(unknown)} "
                "(the TypeScript generator translates none of them)"
            )

    @staticmethod
    def _alone(
        schema: Mapping[str, Any],
        key: str,
        path: str,
        also: frozenset[str] | set[str] = frozenset(),
    ) -> None:
        others = sorted((set(schema) & _STRUCTURAL) - {key, *also})
        if others:
            raise SchemaError(f"{path}: {key} together with {', '.join(others)}")

    @staticmethod
    def _check_type(schema: Mapping[str, Any], path: str, expected: list[str] | None) -> list[str]:
        """The ``type`` keyword as a list, checked against the keywords beside it."""
        kind = schema.get("type")
        if kind is None:
            if _OBJECT_KEYWORDS & schema.keys():
                types = ["object"]
            elif _ARRAY_KEYWORDS & schema.keys():
                types = ["array"]
            else:
                return [_FREE_FORM]  # only annotations
        elif isinstance(kind, str):
            types = [kind]
        elif isinstance(kind, list) and kind and all(isinstance(k, str) for k in kind):
            types = list(kind)
        else:
            raise SchemaError(f"{path}: type must be a name or a list of names, not {kind!r}")
        for kind in types:
            if kind not in _PRIMITIVES and kind not in ("array", "object"):
                raise SchemaError(f"{path}: unknown type {kind!r}")
        if expected is not None and types != expected:
            raise SchemaError(f"{path}: type {types!r} where {expected!r} was expected")
        for keywords, needs in ((_OBJECT_KEYWORDS, "object"), (_ARRAY_KEYWORDS, "array")):
            stray = sorted(keywords & schema.keys())
            if stray and needs not in types:
                raise SchemaError(f"{path}: {', '.join(stray)} on a schema of type {types!r}")
        return types

    # ----------------------------------------------------------------- shapes

    def _ref(self, ref: Any, path: str) -> str:
        prefix = "#/$defs/"
        if not isinstance(ref, str) or not ref.startswith(prefix):
            raise SchemaError(f"{path}: $ref {ref!r} is not a #/$defs/ reference")
        name = _unpointer(ref[len(prefix) :])
        if name not in self.defs:
            raise SchemaError(f"{path}: $ref {ref!r} names no model in {self.side}'s $defs")
        return self.names[name]

    def _union_of(self, schema: Mapping[str, Any], key: str, path: str, indent: str) -> _Type:
        members = schema[key]
        if not isinstance(members, list) or not members:
            raise SchemaError(f"{path}: {key} must be a non-empty list")
        if "discriminator" in schema:
            self._check_discriminator(schema["discriminator"], members, f"{path}/discriminator")
        return _union(
            self.type_of(member, f"{path}/{key}/{index}", indent)
            for index, member in enumerate(members)
        )

    def _check_discriminator(self, discriminator: Any, members: list[Any], path: str) -> None:
        """A discriminated union narrows in TypeScript only if every member is a model
        whose discriminating property is a literal: check it, and the mapping."""
        if not isinstance(discriminator, Mapping) or not isinstance(
            discriminator.get("propertyName"), str
        ):
            raise SchemaError(f"{path}: a discriminator needs a propertyName")
        tag: str = discriminator["propertyName"]
        refs: dict[str, tuple[str, ...]] = {}  # $ref -> the tag's literal types
        for index, member in enumerate(members):
            ref = member.get("$ref") if isinstance(member, Mapping) else None
            if not isinstance(ref, str):
                raise SchemaError(f"{path}: member {index} of a discriminated union is not a $ref")
            self._ref(ref, path)
            model = self.defs[_unpointer(ref.removeprefix("#/$defs/"))]
            prop = model.get("properties", {}).get(tag) if isinstance(model, Mapping) else None
            if not isinstance(prop, Mapping) or not ("const" in prop or "enum" in prop):
                raise SchemaError(f"{path}: {ref} has no literal {tag!r} property to narrow on")
            literals = self._literals(prop, f"{path}/{ref}")
            refs[ref] = literals.members or (literals.text,)
        mapping = discriminator.get("mapping", {})
        if not isinstance(mapping, Mapping):
            raise SchemaError(f"{path}: mapping must be an object")
        for value, ref in mapping.items():
            if ref not in refs:
                raise SchemaError(f"{path}: mapping {value!r} -> {ref!r} is not a member")
            if _literal(value, path) not in refs[ref]:
                raise SchemaError(f"{path}: mapping {value!r} -> {ref!r}: its {tag} is not that")

    def _literals(self, schema: Mapping[str, Any], path: str) -> _Type:
        if "const" in schema and "enum" in schema:
            raise SchemaError(f"{path}: const together with enum")
        self._alone(schema, "const" if "const" in schema else "enum", path, also={"type"})
        values = [schema["const"]] if "const" in schema else schema["enum"]
        if not isinstance(values, list) or not values:
            raise SchemaError(f"{path}: enum must be a non-empty list")
        types = self._check_type(schema, path, None) if "type" in schema else None
        literals = []
        for value in values:
            literal = _literal(value, path)
            if types is not None and not _fits(value, types):
                raise SchemaError(f"{path}: {literal} is not of type {types!r}")
            literals.append(_Type(literal))
        return _union(literals)

    def _typed(self, kind: str, schema: Mapping[str, Any], path: str, indent: str) -> _Type:
        if kind == _FREE_FORM:
            return _Type("unknown")
        if kind == "array":
            return self._array(schema, path, indent)
        if kind == "object":
            return self._object(schema, path, indent)
        return _Type(_PRIMITIVES[kind])

    def _array(self, schema: Mapping[str, Any], path: str, indent: str) -> _Type:
        items = schema.get("items")
        min_items = schema.get("minItems", 0)
        max_items = schema.get("maxItems")
        if "prefixItems" not in schema:
            if items is False or max_items == 0:
                return _Type("[]")
            element = _Type("unknown") if items in (None, True) else None
            return _Type(_array_of(element or self.type_of(items, f"{path}/items", indent)))
        prefix = schema["prefixItems"]
        if not isinstance(prefix, list):
            raise SchemaError(f"{path}: prefixItems must be a list")
        parts = []
        for index, item in enumerate(prefix):
            element = self.type_of(item, f"{path}/prefixItems/{index}", indent)
            if index < min_items:
                parts.append(element.text)
            else:  # an optional element: `[A, B?]`
                parts.append(f"({element.text})?" if element.members else f"{element.text}?")
        closed = items is False or (
            items is None and isinstance(max_items, int) and max_items <= len(prefix)
        )
        if not closed:
            rest = _Type("unknown") if items in (None, True) else None
            parts.append("..." + _array_of(rest or self.type_of(items, f"{path}/items", indent)))
        return _Type(f"[{', '.join(parts)}]")

    def _object(self, schema: Mapping[str, Any], path: str, indent: str) -> _Type:
        extra = schema.get("additionalProperties", True)
        if not schema.get("properties"):
            self._properties(schema, path)  # checks `required` names none
            if extra is False:
                return _Type("Record<string, never>")
            value = self.type_of(extra, f"{path}/additionalProperties", indent)
            return _Type(f"Record<string, {value.text}>")
        body = "".join(self._members(schema, path, indent + "  "))
        return _Type(f"{{\n{body}{indent}}}")

    def _properties(self, schema: Mapping[str, Any], path: str) -> tuple[dict[str, Any], set[str]]:
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        if not isinstance(properties, Mapping) or not all(isinstance(k, str) for k in properties):
            raise SchemaError(f"{path}: properties must be an object")
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise SchemaError(f"{path}: required must be a list of names")
        unknown = sorted(set(required) - set(properties))
        if unknown:
            raise SchemaError(f"{path}: required names no such property: {', '.join(unknown)}")
        return dict(properties), set(required)

    def _members(self, schema: Mapping[str, Any], path: str, indent: str) -> list[str]:
        """The lines of an object type's body, each property with its JSDoc."""
        properties, required = self._properties(schema, path)
        lines = []
        types = []
        optional_seen = False
        for name, prop in properties.items():
            optional = not self.sent_in_full and name not in required
            optional_seen |= optional
            kind = self.type_of(prop, f"{path}/properties/{_pointer(name)}", indent)
            types.append(kind)
            doc: list[str] = []
            if isinstance(prop, Mapping):
                if isinstance(prop.get("description"), str):
                    doc = _doc_lines(prop["description"], len(indent))
                if optional and "default" in prop:
                    doc.append(f"@default {json.dumps(prop['default'], ensure_ascii=False)}")
            key = name if _IDENTIFIER.fullmatch(name) else json.dumps(name)
            lines.append(_jsdoc(doc, indent))
            lines.append(_assign(f"{indent}{key}{'?' if optional else ''}: ", kind, ";", indent))
        extra = schema.get("additionalProperties", True)
        if extra is not True:  # a schema (false adds nothing: TS types are open anyway)
            value = self.type_of(extra, f"{path}/additionalProperties", indent)
            if value.text != "never":
                # An index signature must admit every named property's type too.
                undefined = [_Type("undefined")] if optional_seen else []
                index = _union([value, *types, *undefined])
                lines.append(_assign(f"{indent}[key: string]: ", index, ";", indent))
        return lines


# --------------------------------------------------------------------------- helpers


def _defs(root: Mapping[str, Any], side: str) -> dict[str, Any]:
    defs = root.get("$defs", {})
    if not isinstance(defs, Mapping) or not all(isinstance(name, str) for name in defs):
        raise SchemaError(f"{side}#/$defs: must be an object of schemas")
    return dict(defs)


def _declared_names(roots: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Each model's TypeScript name; two models may not end up with the same one."""
    names: dict[str, str] = {}
    taken = {_VERSION_NAME: "the protocol version"}
    taken.update({top: "a top-level union" for top, _ in _TOP_LEVEL.values()})
    for side, root in roots.items():
        for name in _defs(root, side):
            ts_name = _identifier(name)
            owner = taken.setdefault(ts_name, name)
            if owner != name:
                raise SchemaError(
                    f"{side}#/$defs/{name}: its TypeScript name {ts_name} is also {owner}'s"
                )
            names[name] = ts_name
    return names


def _identifier(name: str) -> str:
    """``name`` as a valid TypeScript type name (unchanged when it already is one)."""
    ident = re.sub(r"[^A-Za-z0-9_$]", "_", name)
    if not ident or ident[0].isdigit():
        ident = "_" + ident
    return ident + "_" if ident in _RESERVED else ident


def _literal(value: Any, path: str) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float) and math.isfinite(value):
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value)
    raise SchemaError(f"{path}: {value!r} is no literal type (string, number, boolean or null)")


def _fits(value: Any, types: list[str]) -> bool:
    """Whether a const or enum value is of one of the JSON Schema ``types``."""
    if value is None or isinstance(value, bool):
        return ("null" if value is None else "boolean") in types
    if isinstance(value, int | float):
        whole = isinstance(value, int) or value.is_integer()
        return "number" in types or (whole and "integer" in types)
    return "string" in types


def _pointer(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _unpointer(name: str) -> str:
    return name.replace("~1", "/").replace("~0", "~")


def _doc_lines(text: str, indent: int = 0) -> list[str]:
    """A description as JSDoc lines: RST ````code```` as Markdown, long lines wrapped."""
    text = text.replace("``", "`").strip()
    lines: list[str] = []
    for line in text.splitlines():
        width = WIDTH - indent - 3
        lines.extend(
            textwrap.wrap(line, width, break_long_words=False, break_on_hyphens=False) or [""]
        )
    return lines


def _jsdoc(lines: list[str], indent: str) -> str:
    lines = [line.replace("*/", "*\\/").rstrip() for line in lines]
    if not lines:
        return ""
    if len(lines) == 1 and len(indent) + len(lines[0]) + 7 <= WIDTH:
        return f"{indent}/** {lines[0]} */\n"
    body = "".join(f"{indent} * {line}".rstrip() + "\n" for line in lines)
    return f"{indent}/**\n{body}{indent} */\n"
