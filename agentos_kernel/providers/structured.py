"""Role output schemas (JSON Schema 2020-12) in each provider's structured-output dialect.

Pure functions, no I/O. A role's schema is what the runtime checks the answer against
(roles.py); these translations only steer the model towards it, so a keyword a dialect
cannot express is dropped here and still enforced by that check (and its repair turns).

- OpenAI `response_format: json_schema` with `strict: true`: every object closed
  (`additionalProperties: false`) with every property required, an optional property made
  nullable instead; only the keywords strict mode supports. `drop_optional_nulls` undoes the
  nullable trick on the answer.
- Anthropic: a forced tool whose `input_schema` is the role schema (`output_tool`); its
  `tool_use` input is the answer.
- Gemini `responseSchema`: the OpenAPI 3.0 subset (upper-case types, `nullable`, no
  `additionalProperties`, `const` or `$ref`), properties in the schema's own order.
"""

from __future__ import annotations

from typing import Any

OPENAI_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "anyOf",
    "description", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minItems", "maxItems"})
"""What OpenAI's strict mode accepts (platform.openai.com/docs/guides/structured-outputs)."""
GEMINI_KEYWORDS = frozenset({
    "type", "format", "description", "nullable", "enum", "items", "properties", "required",
    "minItems", "maxItems", "minimum", "maximum", "anyOf", "propertyOrdering"})
"""The Schema object fields of generateContent's responseSchema (an OpenAPI 3.0 subset)."""
OUTPUT_TOOL_PREFIX = "submit_"
"""Anthropic: the forced tool for a role's answer is named submit_<schema id>."""


def _enum_type(values: list[Any]) -> str | None:
    """The one JSON type of an enum's values, if they share one."""
    kinds = {"string" if isinstance(v, str) else "boolean" if isinstance(v, bool)
             else "integer" if isinstance(v, int) else "number" if isinstance(v, float)
             else "null" if v is None else "other" for v in values}
    return kinds.pop() if len(kinds) == 1 and "other" not in kinds else None


def _typed(node: dict[str, Any]) -> dict[str, Any]:
    """`const` as a one-value `enum`, and an enum's type spelt out (both dialects want one)."""
    node = dict(node)
    if "const" in node:
        node["enum"] = [node.pop("const")]
    if "enum" in node and "type" not in node and (kind := _enum_type(node["enum"])):
        node["type"] = kind
    return node


def openai_strict(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` in OpenAI's strict dialect (see the module docstring)."""
    node = _typed(schema)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key not in OPENAI_KEYWORDS:
            continue
        if key == "properties":
            required = set(node.get("required", ()))
            out[key] = {name: (openai_strict(sub) if name in required else _nullable(openai_strict(sub)))
                        for name, sub in value.items()}
        elif key == "items" and isinstance(value, dict):
            out[key] = openai_strict(value)
        elif key == "anyOf":
            out[key] = [openai_strict(v) for v in value]
        elif key not in ("required", "additionalProperties"):
            out[key] = value
    if "properties" in out or out.get("type") == "object":
        out.setdefault("properties", {})
        out["type"] = "object"
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    return out


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """`node` that also accepts null: how strict mode spells an optional property."""
    kind = node.get("type")
    if isinstance(kind, str):
        node = {**node, "type": [kind, "null"]}
    elif isinstance(kind, list) and "null" not in kind:
        node = {**node, "type": [*kind, "null"]}
    elif "anyOf" in node:
        node = {**node, "anyOf": [*node["anyOf"], {"type": "null"}]}
    else:
        return {"anyOf": [node, {"type": "null"}]}
    if "enum" in node and None not in node["enum"]:
        node["enum"] = [*node["enum"], None]
    return node


def openai_response_format(schema_id: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions `response_format` for a role schema."""
    return {"type": "json_schema",
            "json_schema": {"name": schema_id, "strict": True, "schema": openai_strict(schema)}}


def drop_optional_nulls(value: Any, schema: dict[str, Any]) -> Any:
    """An answer made under `openai_strict` back in the role schema's shape: a null for a
    property the schema does not require means "absent" (strict mode cannot omit it)."""
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        required = set(schema.get("required", ()))
        props = schema["properties"]
        return {k: drop_optional_nulls(v, props.get(k, {})) for k, v in value.items()
                if v is not None or k in required or k not in props}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [drop_optional_nulls(v, schema["items"]) for v in value]
    return value


def output_tool(schema_id: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Anthropic: the tool the model is made to call with its answer as the input."""
    return {"name": OUTPUT_TOOL_PREFIX + schema_id,
            "description": f"Submit your answer: one {schema_id} object. Call this once, "
                           "when you are done.",
            "input_schema": {k: v for k, v in schema.items() if k not in ("$schema", "$id")}}


def gemini_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as a Gemini Schema object (see the module docstring)."""
    node = _typed(schema)
    kind = node.get("type")
    out: dict[str, Any] = {}
    if isinstance(kind, list):
        rest = [k for k in kind if k != "null"]
        if len(rest) == 1:
            kind = rest[0]
            out["nullable"] = True
        else:  # a real union: anyOf of the single types
            return {"anyOf": [gemini_schema({**node, "type": k}) for k in rest],
                    **({"nullable": True} if "null" in kind else {})}
    for key, value in node.items():
        if key not in GEMINI_KEYWORDS:
            continue
        if key == "type":
            out[key] = str(kind).upper()
        elif key == "properties":
            out[key] = {name: gemini_schema(sub) for name, sub in value.items()}
            out["propertyOrdering"] = list(value)
        elif key == "items" and isinstance(value, dict):
            out[key] = gemini_schema(value)
        elif key == "anyOf":
            out[key] = [gemini_schema(v) for v in value]
        elif key == "enum":  # Gemini enums are strings; another enum is left to the check
            if all(isinstance(v, str) for v in value if v is not None):
                out[key] = [v for v in value if v is not None]
        else:
            out[key] = value
    return out


__all__ = ["OUTPUT_TOOL_PREFIX", "drop_optional_nulls", "gemini_schema", "openai_response_format",
           "openai_strict", "output_tool"]
