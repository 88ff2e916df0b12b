"""Mock tools that data files configure: the safe calculator never executes its input."""

from __future__ import annotations

import pytest

from agentdbg.engine import (
    KeyValueStore,
    ToolRegistry,
    calculator,
    safe_eval,
    scripted,
    table_lookup,
)


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("5 - 3", 2),
        ("-(2 + 3) * 4", -20),
        ("1 / 4", 0.25),
        ("120 * 0.15", 18.0),
        ("120 + 18.0", 138.0),
        ("  7  ", 7),
        ("+3", 3),
        ("2 * (3 + (4 - 1)) / 3", 4.0),
    ],
)
def test_arithmetic(expression, value):
    assert safe_eval(expression) == value


@pytest.mark.parametrize(
    "expression",
    [
        '__import__("os").getcwd()',
        "x + 1",
        "abs(-1)",
        "2 ** 10",
        "1 if 1 else 2",
        "[1, 2]",
        "'text'",
        "True + 1",
        "(1).real",
        "7 // 2",
        "7 % 2",
        "lambda: 1",
        "",
        "1 +",
        "1" * 2000,
    ],
)
def test_anything_but_arithmetic_is_refused(expression):
    with pytest.raises(ValueError):
        safe_eval(expression)


def test_hostile_input_is_not_executed(tmp_path):
    target = tmp_path / "pwned"
    with pytest.raises(ValueError, match="expression not allowed"):
        safe_eval(f'open("{target}", "w")')
    with pytest.raises(ValueError):
        safe_eval(f'__import__("pathlib").Path("{target}").touch()')
    assert not target.exists()


def test_division_by_zero_is_an_error_observation():
    registry = ToolRegistry([calculator("calc")])
    assert registry.dispatch("calc", "1/0").observation == "ERROR: ZeroDivisionError: division by zero"


def test_key_value_store_set_get_and_missing_key():
    store = KeyValueStore()
    registry = ToolRegistry([store.set_tool(), store.get_tool()])
    assert registry.dispatch("kv_set", {"key": "base", "value": "120"}) == "stored base"
    assert registry.dispatch("kv_get", {"key": "base"}) == "120"
    missing = registry.dispatch("kv_get", {"key": "tax"})
    assert missing.observation == "ERROR: KeyError: 'tax'"


def test_table_lookup_and_missing_key():
    registry = ToolRegistry([table_lookup("catalog", {"Il Gattopardo": 5}, param="title")])
    assert registry.dispatch("catalog", "Il Gattopardo") == 5
    assert registry.dispatch("catalog", "Missing Book").observation == "ERROR: KeyError: 'Missing Book'"


def test_scripted_tool_plays_responses_then_repeats_the_last():
    tool = scripted("flaky", [{"raise": "HTTP 503"}, {"return": 1.5}], timeout=1.0)
    registry = ToolRegistry([tool])
    assert registry.dispatch("flaky", {}).observation == "ERROR: ScriptedFailure: HTTP 503"
    assert registry.dispatch("flaky", {}) == 1.5
    assert registry.dispatch("flaky", {}) == 1.5


@pytest.mark.parametrize("responses", [[], [{"return": 1, "raise": "x"}], [{"wait": 1}], [1], ["return"]])
def test_scripted_tool_refuses_bad_responses(responses):
    with pytest.raises(ValueError):
        scripted("bad", responses)
