"""What a loop hands the recorder, read and checked: token usage in the shapes loops have,
tool-call arguments as objects or as a model API writes them, the SDKs' tool-call objects."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentdbg.engine.tools import ToolError


def usage_tokens(usage: Any) -> int:
    """Tokens a model call used, from what the loop has: a total (int), a (prompt,
    completion) pair, or a usage object or dict as the OpenAI (``prompt_tokens``,
    ``completion_tokens``, ``total_tokens``) or Anthropic (``input_tokens``,
    ``output_tokens``, cache reads and writes) SDKs return it."""
    if usage is None:
        return 0
    if isinstance(usage, bool):
        raise TypeError("tokens should be a count, got a bool")
    if isinstance(usage, int):
        if usage < 0:
            raise ValueError(f"tokens should be 0 or more, got {usage}")
        return usage
    if isinstance(usage, (tuple, list)):
        if len(usage) != 2:
            raise ValueError(f"tokens as a pair is (prompt, completion), got {len(usage)} numbers")
        return usage_tokens(usage[0]) + usage_tokens(usage[1])

    def get(name: str) -> int:
        value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
        return 0 if value is None else usage_tokens(value)

    names = usage.keys() if isinstance(usage, Mapping) else [n for n in _USAGE_NAMES if hasattr(usage, n)]
    if not any(name in _USAGE_NAMES for name in names):
        raise TypeError(f"tokens should be a count, a (prompt, completion) pair or a usage object, "
                        f"got {type(usage).__name__}")
    if get("total_tokens"):
        return get("total_tokens")
    return sum(get(name) for name in _USAGE_NAMES if name != "total_tokens")


_USAGE_NAMES = ("total_tokens", "prompt_tokens", "completion_tokens", "input_tokens", "output_tokens",
                "cache_creation_input_tokens", "cache_read_input_tokens")


def checked_text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} should be text, got {type(value).__name__}")
    return value


def as_text(value: Any) -> str | ToolError:
    if isinstance(value, ToolError):
        return value
    try:
        return str(value)
    except Exception as exc:
        return ToolError("exception", "", f"{type(exc).__name__} while turning the result into text: {exc}")


def describe(exc: BaseException) -> str:
    detail = str(exc)
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def call_text(tool: str, args: dict | str) -> str:
    """The action as written, as the engine writes a structured call (``search({'q': 'x'})``)."""
    if isinstance(args, str):
        return f"{tool}[{args}]"
    return f"{tool}({args!r})"


def arguments(args: Any, strict: bool = False) -> tuple[Any, str | None]:
    """(args, None), or (the arguments as written, why they cannot be read). JSON object
    text is read as the arguments; other text is one positional argument, unless
    ``strict`` (a model API's arguments, which are always a JSON object)."""
    if args is None:
        return {}, None
    if isinstance(args, Mapping):
        return dict(args), None  # written as JSON, run as given
    if not isinstance(args, str):
        if strict:
            return json.dumps(args, default=repr), f"arguments should be a JSON object, got {type(args).__name__}"
        raise TypeError(f"args should be an object or text, got {type(args).__name__}")
    if strict and not args.strip():
        return {}, None
    if not strict and not args.lstrip().startswith("{"):
        return args, None
    try:
        value = json.loads(args)
    except ValueError as exc:
        where = f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        return args, f"arguments are not valid JSON: {getattr(exc, 'msg', exc)}{where}"
    if not isinstance(value, dict):
        return args, f"arguments should be a JSON object, got {type(value).__name__}"
    return value, None


def sdk_call(item: Any) -> tuple[str | None, Any, str, bool]:
    """(name, arguments, id, whether the arguments must be a JSON object) of an OpenAI
    tool call or an Anthropic tool_use block, as an SDK object or a dict; (None, None, "",
    False) for anything else."""
    def get(obj: Any, key: str) -> Any:
        return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)

    if item is None or isinstance(item, str) or callable(item):
        return None, None, "", False
    call_id = get(item, "id")
    call_id = call_id if isinstance(call_id, str) else ""
    function = get(item, "function")
    if function is not None and isinstance(get(function, "name"), str):  # OpenAI
        return get(function, "name"), get(function, "arguments"), call_id, True
    custom = get(item, "custom")
    if custom is not None and isinstance(get(custom, "name"), str):  # an OpenAI custom tool: free text
        text = get(custom, "input")
        return get(custom, "name"), text if isinstance(text, str) else "", call_id, False
    if get(item, "type") == "tool_use" and isinstance(get(item, "name"), str):  # Anthropic
        return get(item, "name"), get(item, "input"), call_id, True
    return None, None, "", False
