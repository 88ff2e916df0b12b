"""Every action format: table-driven good and malformed input, and a property test that
arbitrary input never raises anything but ValueError."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentdbg.engine import (
    Action,
    FinalAnswer,
    parse_bracket_action,
    parse_colon_action,
    parse_json_action,
    parse_numbered_action,
    parse_plan_step,
    parse_script_step,
)
from agentdbg.engine.parsers import PARSERS, get_parser

BRACKET = [
    ("Thought: I need the total copies.\nAction: catalog[Il Gattopardo]",
     Action("I need the total copies.", "catalog", "Il Gattopardo")),
    ("  Thought :  spaced out  \n   Action :   calc [ 5 - 3 ]   ", Action("spaced out", "calc", "5 - 3")),
    ("Action: calc[]", Action("", "calc", "")),
    ("Thought: nested\nAction: calc[(1 + 2) * [3]]", Action("nested", "calc", "(1 + 2) * [3]")),
    ("Thought: I have the number.\nFinal Answer: 2", FinalAnswer("I have the number.", "2")),
    ("Thought: both\nAction: calc[1]\nFinal Answer: 3", FinalAnswer("both\nAction: calc[1]", "3")),
    ("Final Answer:   multi\nline  ", FinalAnswer("", "multi\nline")),
    ("Thought: line one\nline two\nAction: loans[X]", Action("line one\nline two", "loans", "X")),
]
BRACKET_BAD = [
    ("Thought: only thinking", "invalid format, use Action: name[argument]"),
    ("Action: catalog Il Gattopardo", "invalid format 'catalog Il Gattopardo'"),
    ("Action: web search[x]", "invalid format"),
    ("", "invalid format"),
]

COLON = [
    ("Thought: look it up\nAction: lookup_population: India", Action("look it up", "lookup_population", "India")),
    ("Action:math:   1428627663 / 2  ", Action("", "math", "1428627663 / 2")),
    ("Answer: 714313831.5", FinalAnswer("", "714313831.5")),
    ("Thought: done\nFinal Answer: yes", FinalAnswer("done", "yes")),
]
COLON_BAD = [
    ("Action: lookup_population India", "could not parse Action 'lookup_population India'"),
    ("Thought: hmm", "could not parse Action"),
]

JSON = [
    ('Thought: store it\nAction: kv_set\nAction Input: {"key": "a", "value": "1"}',
     Action("store it", "kv_set", {"key": "a", "value": "1"})),
    ('Action:   kv_get  \n  Action Input :  {\n  "key": "a"\n}\n', Action("", "kv_get", {"key": "a"})),
    ("Thought: ok\nFinal Answer: 42", FinalAnswer("ok", "42")),
    ("Action: list_all\nAction Input: {}", Action("", "list_all", {})),
]
JSON_BAD = [
    ("Thought: nothing to do", "no Action: line and no Final Answer:"),
    ("Action: kv_set", "no Action Input: after Action: kv_set"),
    ("Action: kv_set\nAction Input: {key: 1}", "Action Input is not valid JSON: Expecting property name"),
    ("Action: kv_set\nAction Input: [1, 2]", "Action Input must be a JSON object, got list"),
    ('Action: kv_set\nAction Input: "text"', "Action Input must be a JSON object, got str"),
    ("Action: two words\nAction Input: {}", "Action should be a tool name, got 'two words'"),
]

NUMBERED = [
    ("Thought 1: I should search.\nAction 1: Search[Paramore]", Action("I should search.", "Search", "Paramore")),
    ("Action 1:Search[Nikolaj Coster-Waldau]", Action("", "Search", "Nikolaj Coster-Waldau")),  # no space after the colon
    ("Thought 2: so false.\nAction 2: Finish[REFUTES]", FinalAnswer("so false.", "REFUTES")),
    ("Thought 3: again\nAction 3: \n\nfinish[NOT ENOUGH INFO]", FinalAnswer("again", "NOT ENOUGH INFO")),
    ("Action 2: Lookup[named after]", Action("", "Lookup", "named after")),
]
NUMBERED_BAD = [
    ("Thought 1: only thinking", "no 'Action N:' line"),
    ("Action 1: Search Paramore", "invalid action 'Search Paramore'"),
    ("Action 1:", "invalid action ''"),
]


def _cases(parser, good, bad):
    return [(parser, text, expected) for text, expected in good], [(parser, text, msg) for text, msg in bad]


GOOD, BAD = [], []
for parser, good, bad in [
    (parse_bracket_action, BRACKET, BRACKET_BAD),
    (parse_colon_action, COLON, COLON_BAD),
    (parse_json_action, JSON, JSON_BAD),
    (parse_numbered_action, NUMBERED, NUMBERED_BAD),
]:
    g, b = _cases(parser, good, bad)
    GOOD += g
    BAD += b


@pytest.mark.parametrize(("parser", "text", "expected"), GOOD)
def test_text_formats_parse(parser, text, expected):
    assert parser(text) == expected


@pytest.mark.parametrize(("parser", "text", "message"), BAD)
def test_text_formats_refuse_malformed_input_clearly(parser, text, message):
    with pytest.raises(ValueError) as raised:
        parser(text)
    assert message in str(raised.value)


def test_call_text_is_the_action_as_written():
    assert parse_bracket_action("Action: calc[ 5 - 3 ]").call == "calc[5 - 3]"
    assert parse_colon_action("Action: math: 1 + 1").call == "math: 1 + 1"
    assert parse_json_action('Action: kv\nAction Input:  {"k": "é"} ').call == 'kv\nAction Input: {"k": "é"}'


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (("lookup", {"country": "France"}), Action("", "lookup", {"country": "France"})),
        (("calc",), Action("", "calc", {})),  # missing args mean {}
        (["calc", None], Action("", "calc", {})),
        ("calc", Action("", "calc", {})),
        (("finish",), FinalAnswer("", None)),  # ends the run, not a tool call
        (("finish", {"answer": 42}), FinalAnswer("", "42")),
    ],
)
def test_plan_steps(step, expected):
    assert parse_plan_step(step) == expected


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ((), "a plan step is (tool, args)"),
        (("a", {}, "extra"), "a plan step is (tool, args)"),
        ((3, {}), "a plan step's tool must be a name"),
        (("", {}), "a plan step's tool must be a name"),
        (("calc", "1+1"), "a plan step's args must be a dict, got str"),
        ({"tool": "calc"}, "a plan step is (tool, args)"),
    ],
)
def test_plan_steps_malformed(step, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_plan_step(step)


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        ({"thought": "store", "action": "kv_set", "args": {"key": "a"}}, Action("store", "kv_set", {"key": "a"})),
        ({"action": "kv_get"}, Action("", "kv_get", {})),
        ({"thought": "t", "action": {"name": "calc", "args": {"expr": "1"}}}, Action("t", "calc", {"expr": "1"})),
        ({"kind": "finish", "content": "done"}, FinalAnswer("", "done")),
        ({"kind": "finish", "answer": 7, "thought": "end"}, FinalAnswer("end", "7")),
    ],
)
def test_script_steps(step, expected):
    assert parse_script_step(step) == expected


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ("kv_set", "a script step is a dict, got str"),
        ({"kind": "finish"}, "a finish step needs 'content'"),
        ({"thought": "no action"}, "needs an 'action' naming a tool"),
        ({"action": "kv", "args": [1]}, "'args' must be a dict, got list"),
        ({"action": "kv", "thought": 3}, "'thought' must be text, got int"),
    ],
)
def test_script_steps_malformed(step, message):
    with pytest.raises(ValueError, match=message):
        parse_script_step(step)


def test_unknown_format_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown action format 'xml'; known: bracket, colon, json, numbered, plan, script"):
        get_parser("xml")


# Text that looks like the formats, so the property test reaches deep into the parsers.
_pieces = st.sampled_from(
    ["Thought:", "Thought 1:", "Action:", "Action 1:", "Action Input:", "Final Answer:", "Answer:",
     "Finish[", "Search[", "[", "]", ":", "{", "}", '"', "\n", " ", "\t", "calc", "1/0", "é", "\x00", "\r"]
)
_formatish = st.lists(st.one_of(_pieces, st.text(max_size=8)), max_size=25).map("".join)
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=10),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    | st.tuples(children, children),
    max_leaves=12,
)


@pytest.mark.parametrize("name", ["bracket", "colon", "json", "numbered"])
@settings(max_examples=300, deadline=None)
@given(text=st.one_of(st.text(), _formatish))
def test_text_parsers_raise_only_value_error(name, text):
    try:
        PARSERS[name](text)
    except ValueError:
        pass


@pytest.mark.parametrize("name", ["plan", "script", "bracket", "colon", "json", "numbered"])
@settings(max_examples=300, deadline=None)
@given(value=_json_values)
def test_every_parser_raises_only_value_error_on_any_value(name, value):
    try:
        PARSERS[name](value)
    except ValueError:
        pass
