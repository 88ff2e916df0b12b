"""Mock tools that data files can configure: nothing here executes text as code."""

from __future__ import annotations

import ast
import operator
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from agentdbg.engine.tools import Tool

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
MAX_EXPRESSION = 1000  # characters; a longer expression is refused before parsing


def safe_eval(expression: str) -> int | float:
    """Evaluate numbers, + - * /, unary minus and parentheses by walking the syntax tree.

    Anything else (names, calls, attributes, ``**``, ``__import__(...)``) raises ValueError
    without being evaluated. ``1/0`` raises ZeroDivisionError."""
    if len(expression) > MAX_EXPRESSION:
        raise ValueError(f"expression longer than {MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression: {exc.msg}") from None

    def walk(node: ast.AST) -> int | float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) \
                and type(node.value) is not bool:
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            result: int | float = _BINARY[type(node.op)](walk(node.left), walk(node.right))
            return result
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            value: int | float = _UNARY[type(node.op)](walk(node.operand))
            return value
        raise ValueError(f"expression not allowed: {type(node).__name__}")

    return walk(tree.body)


def calculator(name: str = "calc", param: str = "expression", description: str = "") -> Tool:
    return Tool(
        name,
        description or "Arithmetic on numbers: + - * /, unary minus, parentheses.",
        {param: str},
        lambda **kw: safe_eval(kw[param]),
    )


class KeyValueStore:
    """A dict shared by the kv_set / kv_get tools of one run."""

    def __init__(self, initial: Mapping[str, Any] | None = None):
        self.data: dict[str, Any] = dict(initial or {})

    def set_tool(self, name: str = "kv_set", description: str = "") -> Tool:
        def kv_set(key: str, value: str) -> str:
            self.data[key] = value
            return f"stored {key}"

        return Tool(name, description or "Store a value under a key.", {"key": str, "value": str}, kv_set)

    def get_tool(self, name: str = "kv_get", description: str = "", missing: str | None = None) -> Tool:
        """``missing``: what a missing key returns, ``{key}`` filled in (``"missing:{key}"``,
        as the ToyLLM walkthrough's store answers); None: a KeyError, an error observation."""

        def kv_get(key: str) -> Any:
            if key not in self.data:
                if missing is not None:
                    return missing.replace("{key}", key)  # not str.format: the key is data
                raise KeyError(key)
            return self.data[key]

        return Tool(name, description or "Read the value stored under a key.", {"key": str}, kv_get)


def table_lookup(name: str, table: Mapping[str, Any], param: str = "key", description: str = "") -> Tool:
    """Look a key up in a fixed table; a missing key is a KeyError observation."""
    rows = dict(table)

    def lookup(**kw: Any) -> Any:
        return rows[kw[param]]

    return Tool(name, description or f"Look a {param} up in the {name} table.", {param: str}, lookup)


class ScriptedFailure(Exception):
    """Raised by a scripted tool on behalf of a response that says ``raise``."""


def scripted(
    name: str,
    responses: list[Mapping[str, Any]],
    params: Mapping[str, str] | None = None,
    description: str = "",
    timeout: float | None = None,
) -> Tool:
    """A tool that plays back responses in order, for failure demos. Each response is
    ``{"return": value}``, ``{"raise": "message"}`` or ``{"hang": seconds}``; the last one
    repeats once the list is used up."""
    if not responses:
        raise ValueError(f"scripted tool {name!r} needs at least one response")
    for i, response in enumerate(responses):
        if not isinstance(response, Mapping) or len(set(response) & {"return", "raise", "hang"}) != 1:
            raise ValueError(f"scripted tool {name!r}, response {i + 1}: use one of return / raise / hang")
    calls = [0]

    def play(**_kw: Any) -> Any:
        response = responses[min(calls[0], len(responses) - 1)]
        calls[0] += 1
        if "raise" in response:
            raise ScriptedFailure(str(response["raise"]))
        if "hang" in response:
            time.sleep(float(response["hang"]))
            return "(finished after hanging)"
        return response["return"]

    return Tool(name, description or "Scripted responses.", dict(params or {}), play, timeout=timeout)


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def pretend(name: str, params: Mapping[str, str], reply: str, description: str = "") -> Tool:
    """A tool that only pretends to act (delete a file, send a payment): it answers
    ``reply`` with each ``{param}`` filled in from the call's arguments and changes
    nothing. Every call is kept in the tool's ``calls`` list, for tests. Placeholders
    that name no parameter raise ValueError (the text is never run as a format string)."""
    unknown = [found for found in _PLACEHOLDER.findall(reply) if found not in params]
    if unknown:
        raise ValueError(f"pretend tool {name!r}: the reply names {unknown}, which are not parameters")
    calls: list[dict[str, Any]] = []

    def act(**kw: Any) -> str:
        calls.append(dict(kw))
        return _PLACEHOLDER.sub(lambda m: str(kw.get(m.group(1), "")), reply)

    tool = Tool(name, description or "Pretends to act; changes nothing.", dict(params), act)
    tool.calls = calls
    return tool
