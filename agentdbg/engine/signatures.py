"""Describe a plain Python function as a tool: its name, its docstring's first paragraph,
and its parameters' types read from the type hints (``Tool.from_function`` uses this).

Parameters map to the types a tool call's JSON can carry: ``str``, ``int``, ``float``,
``bool``, ``dict`` (object), ``list`` or ``tuple`` (array); ``Any`` or no annotation is
``any``. A parameter with a default, or whose type allows None (``int | None``), may be
left out. Anything else (a class, ``*args``, ``**kwargs``) is refused with a message that
says which parameter and what to write instead: a tool's signature is a contract with the
model, so it is never guessed.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_SIMPLE = {str: "str", int: "int", float: "float", bool: "bool", dict: "object", list: "array", tuple: "array"}
_NAMES = {"str": "str", "int": "int", "float": "float", "bool": "bool", "dict": "object", "list": "array",
          "tuple": "array", "Any": "any", "typing.Any": "any", "object": "any"}
WRITE_INSTEAD = "annotate it as str, int, float, bool, dict, list or Any"


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    description: str
    params: dict[str, str]  # name -> type name (tools.TYPE_NAMES)
    optional: tuple[str, ...]  # parameters that may be left out
    fn: Callable[..., Any]  # the function, or a wrapper passing None for a left-out ``X | None``


def describe_function(fn: Callable[..., Any], name: str | None = None) -> FunctionSpec:
    if not callable(fn):
        raise TypeError(f"a tool is made from a function, got {type(fn).__name__}")
    name = name if name is not None else getattr(fn, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        shown = f"{name!r}" if isinstance(name, str) else "no name"
        raise ValueError(f"{fn!r} has {shown}; give the tool a name: Tool.from_function(fn, name=...)")
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__):
        raise ValueError(f"{name}: an async function cannot be a tool (tools are called synchronously); "
                         "await it yourself and record its result")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: cannot read the function's signature ({exc}); wrap it in a def") from None
    hints = _hints(fn)
    params: dict[str, str] = {}
    optional: list[str] = []
    filled: list[str] = []  # ``X | None`` without a default: called with None when left out
    for param in signature.parameters.values():
        where = f"{name}: parameter {param.name!r}"
        if param.kind is param.VAR_POSITIONAL or param.kind is param.VAR_KEYWORD:
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise ValueError(f"{where} ({star}{param.name}) cannot be described to a model; "
                             "give the tool named parameters")
        if param.kind is param.POSITIONAL_ONLY:
            raise ValueError(f"{where} is positional-only; a tool is called with named arguments")
        hint = hints.get(param.name, param.annotation)
        kind, nullable = _kind(hint, where)
        params[param.name] = kind
        if param.default is not param.empty or nullable:
            optional.append(param.name)
            if param.default is param.empty:
                filled.append(param.name)
    documented = fn.func if isinstance(fn, functools.partial) else fn
    return FunctionSpec(name, first_paragraph(inspect.getdoc(documented) or ""), params, tuple(optional),
                        _filling_none(fn, filled) if filled else fn)


def first_paragraph(doc: str) -> str:
    paragraph = doc.strip().split("\n\n", 1)[0]
    return " ".join(paragraph.split())


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    if isinstance(fn, functools.partial):
        target = fn.func
    elif inspect.isroutine(fn) or inspect.isclass(fn):
        target = fn
    else:  # an object with __call__
        target = type(fn).__call__
    try:
        return typing.get_type_hints(target)
    except Exception:  # an annotation that names something undefined: read each one alone below
        return {}


def _kind(hint: Any, where: str) -> tuple[str, bool]:
    """(type name, whether None is allowed) for one annotation."""
    if hint is inspect.Parameter.empty or hint is Any or hint is object:
        return "any", False
    if isinstance(hint, str):  # an annotation get_type_hints could not resolve
        text = hint.replace(" ", "").strip("'\"")
        nullable = text.endswith("|None") or text.startswith("None|")
        text = text.removesuffix("|None").removeprefix("None|")
        if text.startswith("Optional[") and text.endswith("]"):
            text, nullable = text[len("Optional["):-1], True
        base = text.split("[", 1)[0]
        if base in _NAMES:
            return _NAMES[base], nullable
        raise ValueError(f"{where} has the type {hint!r}, which cannot be resolved; {WRITE_INSTEAD}")
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return _kind(typing.get_args(hint)[0], where)
    if origin is typing.Union or origin is types.UnionType:
        members = typing.get_args(hint)
        others = [m for m in members if m is not type(None)]
        nullable = len(others) < len(members)
        kinds = {_kind(m, where)[0] for m in others}
        if kinds == {"int", "float"}:
            kinds = {"float"}
        return (kinds.pop() if len(kinds) == 1 else "any"), nullable
    if origin is typing.Literal:
        kinds = {"bool" if isinstance(v, bool) else _SIMPLE.get(type(v), "any") for v in typing.get_args(hint)}
        return (kinds.pop() if len(kinds) == 1 else "any"), False
    base = origin or hint
    if base in _SIMPLE:
        return _SIMPLE[base], False
    if isinstance(base, type) and issubclass(base, Mapping):
        return "object", False
    if isinstance(base, type) and issubclass(base, Sequence) and not issubclass(base, (str, bytes, bytearray)):
        return "array", False
    shown = getattr(hint, "__name__", None) or repr(hint)
    raise ValueError(f"{where} has the type {shown}, which a tool call's JSON cannot carry; {WRITE_INSTEAD}")


def _filling_none(fn: Callable[..., Any], names: list[str]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(**kwargs: Any) -> Any:
        for name in names:
            kwargs.setdefault(name, None)
        return fn(**kwargs)

    return call
