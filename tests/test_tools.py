"""The typed registry: validation, and a dispatch that turns every failure into a ToolError."""

from __future__ import annotations

import re

import pytest

from agentdbg.engine import Tool, ToolError, ToolRegistry, scripted
from agentdbg.engine.tools import MAX_TOOL_TIMEOUT


def add(a: int, b: int) -> int:
    return a + b


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry(
        [
            Tool("add", "Add two integers.", {"a": int, "b": int}, add),
            Tool("echo", "Echo text.", {"text": "str"}, lambda text: text),
            Tool("ratio", "A float.", {"x": float}, lambda x: x / 2),
            Tool("boom", "Always raises.", {}, lambda: 1 / 0),
        ]
    )


@pytest.mark.parametrize(
    ("args", "problems"),
    [
        ({"a": 1, "b": 2}, []),
        ({"a": 1}, ["missing argument 'b'"]),
        ({"a": 1, "b": 2, "c": 3}, ["unknown argument 'c'"]),
        ({"a": "1", "b": 2}, ["argument 'a' should be int, got str"]),
        ({"a": True, "b": 2}, ["argument 'a' should be int, got bool"]),  # a bool is not an int
        ({"a": 1.5, "b": 2}, ["argument 'a' should be int, got float"]),
        ({}, ["missing argument 'a'", "missing argument 'b'"]),
    ],
)
def test_validate_reports_every_problem(registry, args, problems):
    assert registry.get("add").validate(args) == problems


def test_float_parameters_accept_ints_but_not_bools(registry):
    ratio = registry.get("ratio")
    assert ratio.validate({"x": 3}) == []
    assert ratio.validate({"x": False}) == ["argument 'x' should be float, got bool"]


def test_dispatch_runs_a_valid_call(registry):
    assert registry.dispatch("add", {"a": 2, "b": 3}) == 5


def test_unknown_tool_lists_the_available_tools(registry):
    error = registry.dispatch("web_search", {"q": "x"})
    assert isinstance(error, ToolError)
    assert error.kind == "unknown_tool"
    assert error.observation == "ERROR: tool 'web_search' does not exist, available: ['add', 'boom', 'echo', 'ratio']"


def test_bad_arguments_are_an_error_not_an_exception(registry):
    error = registry.dispatch("add", {"a": True})
    assert error.kind == "bad_args"
    assert "argument 'a' should be int, got bool" in error.message
    assert "missing argument 'b'" in error.message


def test_an_exception_inside_a_tool_becomes_an_error(registry):
    error = registry.dispatch("boom", {})
    assert error.kind == "exception"
    assert error.observation == "ERROR: ZeroDivisionError: division by zero"


def test_sys_exit_inside_a_tool_does_not_stop_the_loop():
    def leave():
        raise SystemExit(3)

    registry = ToolRegistry([Tool("leave", "", {}, leave)], default_timeout=None)
    assert registry.dispatch("leave", {}).kind == "exception"
    registry = ToolRegistry([Tool("leave", "", {}, leave)], default_timeout=1.0)
    assert registry.dispatch("leave", {}).kind == "exception"


def test_a_tool_past_its_time_limit_is_a_timeout_error():
    slow = scripted("slow", [{"hang": 5}], timeout=0.05)
    error = ToolRegistry([slow]).dispatch("slow", {})
    assert error.kind == "timeout"
    assert error.message == "TimeoutError: slow took longer than 0.05s"


@pytest.mark.parametrize("timeout, message", [
    (1e8, "tool 'slow': timeout must be at most 300 seconds, got 1e+08"),
    (MAX_TOOL_TIMEOUT + 0.5, "at most 300 seconds, got 300.5"),
    (float("inf"), "must be a positive number of seconds, got inf"),
    (float("nan"), "must be a positive number of seconds, got nan"),
    (0, "must be a positive number of seconds, got 0"),
    (-1, "must be a positive number of seconds, got -1"),
    (True, "must be a number of seconds, got bool"),
    ("5", "must be a number of seconds, got str"),
])
def test_a_tool_time_limit_is_positive_and_bounded(timeout, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Tool("slow", "", {}, lambda: None, timeout=timeout)
    with pytest.raises(ValueError, match=re.escape(message)):
        scripted("slow", [{"return": 1}], timeout=timeout)
    tool = Tool("slow", "", {}, lambda: None)
    with pytest.raises(ValueError, match=re.escape(message)):
        tool.timeout = timeout  # set after construction, as a plan loader might
    assert tool.timeout is None


def test_the_longest_time_limit_is_allowed_and_the_registry_default_is_bounded_too():
    assert Tool("slow", "", {}, lambda: None, timeout=MAX_TOOL_TIMEOUT).timeout == 300.0
    assert ToolRegistry([], default_timeout=MAX_TOOL_TIMEOUT).default_timeout == 300.0
    assert ToolRegistry([], default_timeout=None).default_timeout is None  # in the loop's thread, no limit
    with pytest.raises(ValueError, match="default_timeout must be at most 300 seconds, got 1e\\+08"):
        ToolRegistry([], default_timeout=1e8)


def test_one_positional_argument_binds_to_the_only_parameter(registry):
    assert registry.dispatch("echo", "hello") == "hello"


def test_a_positional_argument_for_a_tool_with_several_parameters_is_bad_args(registry):
    error = registry.dispatch("add", "1 2")
    assert error.kind == "bad_args"
    assert "takes 2 named arguments (a, b)" in error.message


def test_arguments_that_are_not_an_object_are_bad_args(registry):
    assert registry.dispatch("add", [1, 2]).kind == "bad_args"


def test_registering_a_name_twice_is_refused(registry):
    with pytest.raises(ValueError, match="registered twice"):
        registry.register(Tool("add", "", {}, add))


def test_unknown_parameter_types_are_refused():
    with pytest.raises(ValueError, match="unknown parameter type 'integer'"):
        Tool("t", "", {"a": "integer"}, add)


def test_specs_describe_tools_for_the_registry_pane(registry):
    spec = registry.specs()[0]
    assert spec == {"name": "add", "description": "Add two integers.", "params": {"a": "int", "b": "int"}, "dangerous": False}
