"""Typed tools and a registry whose dispatch never raises.

Every way a call can go wrong (a tool that does not exist, bad arguments, an exception
inside the tool, a tool that runs past its time limit) comes back as a ToolError, which
the loop turns into an observation the policy can read and recover from.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

# Parameter types by the names data files use; Python types are accepted too.
TYPE_NAMES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (float, int),
    "number": (float, int),
    "bool": (bool,),
    "object": (dict,),
    "array": (list, tuple),
    "any": (object,),  # anything JSON can carry; a function's Any or unannotated parameter
}
_PY_TYPE_NAMES = {str: "str", int: "int", float: "float", bool: "bool", dict: "object", list: "array",
                  tuple: "array", Any: "any", object: "any"}
# The JSON Schema type of each parameter type, for a model API's tool definitions.
SCHEMA_TYPES = {"str": "string", "int": "integer", "float": "number", "number": "number", "bool": "boolean",
                "object": "object", "array": "array", "any": None}
# The longest a tool may run. A tool past its limit is abandoned, not killed, and the
# debugger waits for it: a limit of hours would make the run look hung.
MAX_TOOL_TIMEOUT = 300.0


def check_timeout(value: Any, what: str = "timeout") -> float | None:
    """A tool time limit: None, or seconds above 0 and at most ``MAX_TOOL_TIMEOUT``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} must be a number of seconds, got {type(value).__name__}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{what} must be a positive number of seconds, got {value}")
    if value > MAX_TOOL_TIMEOUT:
        raise ValueError(f"{what} must be at most {MAX_TOOL_TIMEOUT:g} seconds, got {value:g}")
    return float(value)


def type_name(spec: type | str) -> str:
    if isinstance(spec, str):
        if spec not in TYPE_NAMES:
            raise ValueError(f"unknown parameter type {spec!r}; use one of {sorted(TYPE_NAMES)}")
        return spec
    if spec not in _PY_TYPE_NAMES:
        raise ValueError(f"unsupported parameter type {spec!r}")
    return _PY_TYPE_NAMES[spec]


def argument_problems(param_types: Mapping[str, str], optional: Collection[str], args: Mapping[str, Any]) -> list[str]:
    """Every problem with ``args`` for parameters ``param_types`` (name -> type name):
    missing, unknown, or of the wrong type. Pure data: an approval dialog checks edited
    arguments with it, without the tool."""
    problems = []
    for name, kind in param_types.items():
        if name not in args or (args[name] is None and name in optional):
            if name not in optional:
                problems.append(f"missing argument {name!r}")
        elif not _matches(args[name], kind):
            problems.append(f"argument {name!r} should be {kind}, got {type(args[name]).__name__}")
    for name in args:
        if name not in param_types:
            problems.append(f"unknown argument {name!r}")
    return problems


def _matches(value: Any, kind: str) -> bool:
    if kind == "any":
        return True
    # A bool is an int in Python, never in a tool's signature.
    if isinstance(value, bool) and kind != "bool":
        return False
    return isinstance(value, TYPE_NAMES[kind])


@dataclass(frozen=True)
class ToolError:
    """A failed call, returned (never raised). ``kind`` is one of
    unknown_tool, bad_args, exception, timeout."""

    kind: str
    tool: str
    message: str

    @property
    def observation(self) -> str:
        return f"ERROR: {self.message}"

    def __str__(self) -> str:
        return self.observation


# What ``dangerous`` (the decorator) leaves on a function for ``Tool.from_function``.
TOOL_MARKS = "__agentdbg_tool__"

OperationKey = str | Collection[str] | Callable[[dict[str, Any]], Any]


@dataclass
class Tool:
    """A named capability: ``params`` maps argument name to type; all are required but
    those named in ``optional``, which may be left out (or given as null: left out too).

    ``dangerous``: each call waits for a decision (approve, deny, edit the arguments) before
    it runs. ``idempotency_key``: the call is one operation, run at most once per key: a
    parameter name, several, or a function from the arguments to the key (see
    ``operation_key``); a call with a key already in the run's journal is answered with
    the recorded result instead of running again."""

    name: str
    description: str
    params: Mapping[str, type | str]
    fn: Callable[..., Any]
    dangerous: bool = False
    timeout: float | None = None  # seconds, at most MAX_TOOL_TIMEOUT; None = the registry's default
    optional: Collection[str] = ()
    idempotency_key: OperationKey | None = None
    param_types: dict[str, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.param_types = {name: type_name(kind) for name, kind in self.params.items()}
        if isinstance(self.optional, str):
            raise TypeError(f"tool {self.name!r}: optional should be a collection of parameter names")
        unknown = [name for name in self.optional if name not in self.param_types]
        if unknown:
            raise ValueError(f"tool {self.name!r}: optional names {unknown}, which are not parameters")
        self.optional = frozenset(self.optional)
        self.idempotency_key = self._checked_key(self.idempotency_key)

    def _checked_key(self, key: Any) -> OperationKey | None:
        if key is None or callable(key):
            checked: OperationKey | None = key
            return checked
        names = (key,) if isinstance(key, str) else key
        if not isinstance(names, Collection) or not names or not all(isinstance(n, str) for n in names):
            raise TypeError(f"tool {self.name!r}: idempotency_key should be a parameter name, a list of them, "
                            f"or a function of the arguments, got {key!r:.80}")
        unknown = [n for n in names if n not in self.param_types]
        if unknown:
            raise ValueError(f"tool {self.name!r}: idempotency_key names {unknown}, which are not parameters "
                             f"(its parameters: {', '.join(self.param_types) or 'none'})")
        return tuple(dict.fromkeys(names))

    @classmethod
    def from_function(cls, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None,
                      dangerous: bool | None = None, timeout: float | None = None,
                      idempotency_key: OperationKey | None = None) -> Tool:
        """A tool from a plain function: its name (``__name__``), its description (the
        docstring's first paragraph) and its parameters (from the type hints: ``str``,
        ``int``, ``float``, ``bool``, ``dict``, ``list``; ``Any`` or none is ``any``; a
        default or ``X | None`` makes a parameter optional). Raises ValueError, naming
        the parameter, for a signature a tool call cannot fill. ``dangerous`` and
        ``idempotency_key`` default to what the ``dangerous`` decorator said, if it was used."""
        from agentdbg.engine.signatures import describe_function

        spec = describe_function(fn, name)
        marks = getattr(fn, TOOL_MARKS, None)
        marks = marks if isinstance(marks, dict) else {}
        if dangerous is None:
            dangerous = bool(marks.get("dangerous", False))
        if idempotency_key is None:
            idempotency_key = marks.get("idempotency_key")
        return cls(spec.name, spec.description if description is None else description, spec.params, spec.fn,
                   dangerous=dangerous, timeout=timeout, optional=spec.optional, idempotency_key=idempotency_key)

    def operation_key(self, args: Mapping[str, Any]) -> str | None:
        """The call's operation key (None for a tool without ``idempotency_key``): the tool's
        name, then the named arguments as JSON (``append_line:{"line":"x","path":"log"}``) or
        what the key function returned. Raises ValueError when no key can be made."""
        key = self.idempotency_key
        if key is None:
            return None
        if callable(key):
            value = key(dict(args))
            if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
                raise ValueError(f"the idempotency key function of {self.name} returned {value!r:.80}, "
                                 "not a non-empty text or number")
            return f"{self.name}:{value}"
        chosen = {name: args.get(name) for name in key}
        return f"{self.name}:" + json.dumps(chosen, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                                            default=repr)

    def describe_key(self) -> str:
        """How the operation key is made, for the tool list: ``path, line`` or ``order_key()``."""
        key = self.idempotency_key
        if key is None:
            return ""
        if callable(key):
            return f"{getattr(key, '__name__', type(key).__name__)}()"
        return ", ".join(key)

    @property
    def required(self) -> list[str]:
        return [name for name in self.param_types if name not in self.optional]

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "timeout":  # checked on every assignment, the constructor's included
            value = check_timeout(value, f"tool {self.name!r}: timeout")
        elif name == "idempotency_key" and "param_types" in self.__dict__:  # after the constructor
            value = self._checked_key(value)
        super().__setattr__(name, value)

    def bind(self, args: Mapping[str, Any] | str) -> dict[str, Any]:
        """Turn one positional string (``calc[5 - 3]``) into the tool's single parameter."""
        if isinstance(args, str):
            if not self.param_types and not args.strip():
                return {}  # look[]: a tool without parameters, called with none
            # The tool's one parameter, or its one required parameter.
            names = list(self.param_types) if len(self.param_types) == 1 else self.required
            if len(names) != 1:
                raise ValueError(
                    f"{self.name} takes {len(self.param_types)} named arguments "
                    f"({', '.join(self.param_types) or 'none'}), not one positional argument"
                )
            return {names[0]: args}
        if not isinstance(args, Mapping):
            raise ValueError(f"arguments must be an object, got {type(args).__name__}")
        return {name: value for name, value in args.items() if not (value is None and name in self.optional)}

    def validate(self, args: Mapping[str, Any]) -> list[str]:
        """Every problem with ``args``: missing, unknown, or of the wrong type."""
        return argument_problems(self.param_types, self.optional, args)

    def spec(self) -> dict[str, Any]:
        """What the debugger's tool registry pane shows (JSON-ready)."""
        spec = {
            "name": self.name,
            "description": self.description,
            "params": dict(self.param_types),
            "dangerous": self.dangerous,
        }
        if self.optional:
            spec["optional"] = [name for name in self.param_types if name in self.optional]
        if self.idempotency_key is not None:
            spec["idempotency_key"] = self.describe_key()
        return spec

    def json_schema(self) -> dict[str, Any]:
        """The parameters as a JSON Schema object, for a model API's tool definition."""
        properties = {}
        for name, kind in self.param_types.items():
            schema_type = SCHEMA_TYPES[kind]
            properties[name] = {"type": schema_type} if schema_type else {}
        return {"type": "object", "properties": properties, "required": self.required}


class ToolRegistry:
    def __init__(self, tools: list[Tool] | None = None, default_timeout: float | None = 10.0):
        """``default_timeout``: seconds for a tool without its own limit, at most
        ``MAX_TOOL_TIMEOUT``; None runs such tools in the loop's thread, without a limit."""
        self._tools: dict[str, Tool] = {}
        self.default_timeout = check_timeout(default_timeout, "default_timeout")
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool | str, fn: Callable[..., Any] | None = None) -> Tool:
        """Add ``tool``; or, as the ToyLLM loop registers its tools, a name and a plain
        function (``register("kv_get", kv.get)``), described from its type hints by
        ``Tool.from_function``."""
        if isinstance(tool, str):
            if fn is None:
                raise TypeError(f"register({tool!r}) needs the function too: register({tool!r}, fn)")
            tool = Tool.from_function(fn, name=tool)
        elif fn is not None:
            raise TypeError("register(tool) takes a Tool alone, or a name and a function")
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        self._tools[tool.name] = tool
        return tool

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return sorted(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        return [self._tools[name].spec() for name in self.names]

    def dispatch(self, name: str, args: Mapping[str, Any] | str) -> Any | ToolError:
        """Run a tool: its result, or a ToolError. Never raises."""
        tool = self._tools.get(name)
        if tool is None:
            return ToolError(
                "unknown_tool", name, f"tool '{name}' does not exist, available: {self.names}"
            )
        try:
            bound = tool.bind(args)
        except ValueError as exc:
            return ToolError("bad_args", name, f"bad arguments for {name}: {exc}")
        problems = tool.validate(bound)
        if problems:
            return ToolError("bad_args", name, f"bad arguments for {name}: {'; '.join(problems)}")
        timeout = tool.timeout if tool.timeout is not None else self.default_timeout
        return _call(tool, bound, timeout)


def _describe(exc: BaseException) -> str:
    detail = str(exc)
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def _call(tool: Tool, args: dict[str, Any], timeout: float | None) -> Any | ToolError:
    if timeout is None:
        try:
            return tool.fn(**args)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # errors are data, even sys.exit() inside a tool
            return ToolError("exception", tool.name, _describe(exc))
    # A thread, so a hanging tool cannot hang the loop. Python cannot kill the thread; it is
    # a daemon and is abandoned, which is the honest limit of in-process tools.
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = tool.fn(**args)
        except BaseException as exc:  # noqa: BLE001 - reported as data below
            box["error"] = exc

    worker = threading.Thread(target=target, name=f"tool:{tool.name}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        return ToolError("timeout", tool.name, f"TimeoutError: {tool.name} took longer than {timeout:g}s")
    if "error" in box:
        return ToolError("exception", tool.name, _describe(box["error"]))
    return box.get("result")


def dangerous(fn: Callable[..., Any] | None = None, *, idempotency_key: OperationKey | None = None) -> Any:
    """Mark a function as a dangerous tool: each call waits for a decision before it runs
    (``Tool.from_function`` and ``agentdbg.record(tools=[fn])`` read the mark). Use as
    ``@dangerous`` or ``@dangerous(idempotency_key="order")``. The function is returned
    unchanged: calling it yourself still just calls it."""

    def mark(target: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(target):
            raise TypeError(f"dangerous marks a function, got {type(target).__name__}")
        setattr(target, TOOL_MARKS, {"dangerous": True, "idempotency_key": idempotency_key})
        return target

    return mark if fn is None else mark(fn)
