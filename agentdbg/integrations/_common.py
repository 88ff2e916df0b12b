"""What the SDK wrappers share: attribute access on SDK objects or plain dicts, tool
definitions both ways, and the delegation that keeps every other method of a client."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agentdbg.engine.tools import Tool, ToolRegistry

_SCHEMA_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "object": "object",
                 "array": "array"}


def get(obj: Any, key: str, default: Any = None) -> Any:
    """``obj[key]`` for a dict, ``obj.key`` for an SDK object."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def text_parts(content: Any) -> str:
    """A message's content as text: a string, or its text parts joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable):
        return "\n".join(str(get(part, "text") or "") for part in content
                         if get(part, "type") == "text" and get(part, "text"))
    return str(content)


def spec_from_schema(name: Any, description: Any, schema: Any) -> dict | None:
    """A tool as the trace lists it, from a model API's tool definition (JSON Schema)."""
    if not isinstance(name, str) or not name:
        return None
    params: dict[str, str] = {}
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    for param, spec in (properties.items() if isinstance(properties, Mapping) else ()):
        kind = spec.get("type") if isinstance(spec, Mapping) else None
        if isinstance(kind, list):  # ["string", "null"]
            kind = next((k for k in kind if k != "null"), None)
        params[str(param)] = _SCHEMA_TYPES.get(kind, "any") if isinstance(kind, str) else "any"
    required = schema.get("required") if isinstance(schema, Mapping) else None
    spec = {"name": name, "description": description if isinstance(description, str) else "",
            "params": params, "dangerous": False}
    optional = [p for p in params if not (isinstance(required, list) and p in required)]
    if optional:
        spec["optional"] = optional
    return spec


def tools_of(tools: Any) -> list[Tool]:
    """Tool objects from a recorder, a registry, or a list of tools and plain functions."""
    registry = getattr(tools, "registry", tools)
    if isinstance(registry, ToolRegistry):
        return list(registry)
    return [item if isinstance(item, Tool) else Tool.from_function(item) for item in registry]


def first_user_text(messages: Any) -> str:
    for message in messages or ():
        if get(message, "role") == "user":
            return text_parts(get(message, "content"))
    return ""


class Delegate:
    """Everything not overridden is the wrapped object's own."""

    def __init__(self, wrapped: Any):
        object.__setattr__(self, "_wrapped", wrapped)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._wrapped, name)

    def __repr__(self) -> str:
        return f"<recorded {self._wrapped!r}>"


def recording(create: Callable[..., Any], before: Callable[[dict], None], after: Callable[[Any], None]) -> Callable[..., Any]:
    """``create`` with the request recorded before it is sent and the response after it
    comes back (awaited first, for an async client)."""

    def create_recorded(*args: Any, **kwargs: Any) -> Any:
        before(kwargs)
        response = create(*args, **kwargs)
        if inspect.isawaitable(response):
            return _after_awaiting(response, after)
        after(response)
        return response

    return create_recorded


async def _after_awaiting(response: Any, after: Callable[[Any], None]) -> Any:
    result = await response
    after(result)
    return result
