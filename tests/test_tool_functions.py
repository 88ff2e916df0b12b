"""Tool.from_function: plain functions become tools from their names, docstrings and type
hints, and validate and run as the engine's other tools do."""

from __future__ import annotations

import datetime
import functools
from typing import Any, Literal

import pytest

from agentdbg.engine import ReActAgent, ScriptedPlan, Tool, ToolRegistry


def search(query: str, limit: int = 3, site: str | None = None) -> list:
    """Search the catalogue for titles.

    The second paragraph is not part of the description."""
    return [query, limit, site]


def note(text: str | None, tags: list[str], meta: dict[str, int], extra: Any, mode: Literal["a", "b"],
         ratio: int | float, anything=None) -> tuple:
    return (text, tags, meta, extra, mode, ratio, anything)


def test_name_description_and_parameters_come_from_the_function():
    tool = Tool.from_function(search)
    assert tool.spec() == {"name": "search", "description": "Search the catalogue for titles.",
                           "params": {"query": "str", "limit": "int", "site": "str"}, "dangerous": False,
                           "optional": ["limit", "site"]}
    assert tool.required == ["query"]
    assert Tool.from_function(note).param_types == {
        "text": "str", "tags": "array", "meta": "object", "extra": "any", "mode": "str", "ratio": "float",
        "anything": "any"}
    assert Tool.from_function(note).required == ["tags", "meta", "extra", "mode", "ratio"]
    renamed = Tool.from_function(search, name="find", description="Find.", dangerous=True, timeout=2)
    assert (renamed.name, renamed.description, renamed.dangerous, renamed.timeout) == ("find", "Find.", True, 2.0)


def test_validation_keeps_the_engine_rules_and_any_takes_anything():
    registry = ToolRegistry([Tool.from_function(search), Tool.from_function(note)])
    assert registry.dispatch("search", {"query": "x"}) == ["x", 3, None]
    assert registry.dispatch("search", "x") == ["x", 3, None]  # one string: the one required parameter
    assert registry.dispatch("search", {"query": "x", "limit": None}) == ["x", 3, None]  # null: left out
    bad = registry.dispatch("search", {"query": "x", "limit": True, "page": 2})
    assert bad.kind == "bad_args"
    assert bad.message == ("bad arguments for search: argument 'limit' should be int, got bool; "
                           "unknown argument 'page'")
    full = {"tags": [], "meta": {}, "extra": True, "mode": "a", "ratio": 1}
    assert registry.dispatch("note", full) == (None, [], {}, True, "a", 1, None)  # text | None left out: None
    assert registry.dispatch("note", {**full, "extra": None})[3] is None  # a required any takes null
    assert "missing argument 'extra'" in registry.dispatch("note", {"tags": [], "meta": {}, "mode": "a",
                                                                    "ratio": 1}).message
    assert registry.dispatch("note", {**full, "tags": "a"}).message.endswith("argument 'tags' should be array, got str")


def test_a_function_tool_runs_in_the_engine():
    agent = ReActAgent(ScriptedPlan([("search", {"query": "gattopardo", "limit": 1}), ("finish", {"answer": "1"})]),
                       ToolRegistry([Tool.from_function(search)]))
    trace = agent.run("find it")
    assert trace.tool_calls == [("search", {"query": "gattopardo", "limit": 1}, ["gattopardo", 1, None])]
    assert trace.steps[0].observation == "['gattopardo', 1, None]"
    assert trace.outcome.status == "answered"
    assert trace.events[0].tools[0]["optional"] == ["limit", "site"]


def test_partials_methods_and_callable_objects():
    class Library:
        def count(self, title: str) -> int:
            """Copies of a title."""
            return len(title)

        def __call__(self, title: str, copies: int = 1) -> str:
            return title * copies

    assert Tool.from_function(Library().count).spec()["params"] == {"title": "str"}
    called = Tool.from_function(Library(), name="library")
    assert called.param_types == {"title": "str", "copies": "int"} and called.fn(title="a", copies=2) == "aa"
    partial = Tool.from_function(functools.partial(search, limit=1), name="search_one")
    assert partial.description == "Search the catalogue for titles." and partial.required == ["query"]


def test_json_schema_for_a_model_api():
    assert Tool.from_function(search).json_schema() == {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}, "site": {"type": "string"}},
        "required": ["query"]}
    assert Tool.from_function(note).json_schema()["properties"]["extra"] == {}


def test_signatures_a_model_cannot_fill_are_refused_naming_the_parameter():
    def stars(*queries: str): ...
    def options(query: str, **options: Any): ...
    def positional(query: str, /): ...
    def when(day: datetime.date): ...
    def undefined(x: Undefined): ...  # noqa: F821 - a name the module never defines
    async def fetch(url: str): ...

    cases = [
        (stars, "stars: parameter 'queries' (*queries) cannot be described to a model"),
        (options, "options: parameter 'options' (**options) cannot be described to a model"),
        (positional, "positional: parameter 'query' is positional-only"),
        (when, "when: parameter 'day' has the type date, which a tool call's JSON cannot carry"),
        (undefined, "undefined: parameter 'x' has the type 'Undefined', which cannot be resolved"),
        (fetch, "fetch: an async function cannot be a tool"),
        (lambda x: x, "give the tool a name"),
    ]
    for fn, message in cases:
        with pytest.raises(ValueError) as raised:
            Tool.from_function(fn)
        assert message in str(raised.value)
    with pytest.raises(TypeError):
        Tool.from_function("search")


def test_optional_names_must_be_parameters():
    with pytest.raises(ValueError, match="not parameters"):
        Tool("t", "", {"a": str}, lambda a: a, optional=["b"])
    with pytest.raises(TypeError, match="collection of parameter names"):
        Tool("t", "", {"ab": str}, lambda ab: ab, optional="ab")
    assert Tool("t", "", {"a": "any"}, lambda a: a).validate({"a": True}) == []
