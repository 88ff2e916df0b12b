"""The filter language: each filter, operators and precedence, quoting, smart case,
readable errors, and robustness against odd records and arbitrary text."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentdbg.debugger.filters import FILTER_HELP, FILTERS, parse_filter
from agentdbg.engine import events as ev
from agentdbg.plans import load_plan
from agentdbg.runs import EventRun
from agentdbg.state import StepRecord

ROOT = Path(__file__).resolve().parents[1]


def counters(step=1, repeats=1, tokens=40, total=100):
    return ev.GuardCounters(step=step, steps=[step, 10], repeats=[repeats, 2], errors=[0, None],
                            tokens=[total, None], step_tokens=tokens)


CALC = StepRecord(step=4, thought="I subtract.", tool="calc", args="5 - 3", call="calc[5 - 3]",
                  observation="2", guards=counters(4, tokens=55, total=220))
UNKNOWN = StepRecord(step=1, thought="I search online.", tool="web_search", args="Il Gattopardo copies",
                     call="web_search[Il Gattopardo copies]", error_kind="unknown_tool",
                     error="tool 'web_search' does not exist", observation="ERROR: tool 'web_search' does not exist",
                     observation_error=True, guards=counters(1, tokens=38, total=38))
PARSE = StepRecord(step=3, parse_error="Action Input is not valid JSON", output="Action: kv_set {key: 1}",
                   observation="ERROR: Action Input is not valid JSON", observation_error=True,
                   tripped=ev.GuardTripped(step=3, guard="error_budget", message="error budget exhausted"),
                   guards=counters(3))
REPEAT = StepRecord(step=2, tool="catalog", args={"title": "Il Gattopardo"}, call="catalog[Il Gattopardo]",
                    observation="5", guards=counters(2, repeats=2),
                    tripped=ev.GuardTripped(step=2, guard="repetition", message="action repeated again"))
FINAL = StepRecord(step=5, thought="I have the number.", answer="2", guards=counters(5, repeats=2),
                   end=ev.RunEnd(step=5, outcome="answered", answer="2", steps=5))
RAW = StepRecord(step=6, raw=(ev.RawRecord(step=6, source="swe-agent", note="unmapped record"),))
TIMEOUT = StepRecord(step=7, tool="fx_rate", args={"pair": "EUR/USD"}, call='fx_rate {"pair": "EUR/USD"}',
                     error_kind="timeout", error="TimeoutError: took too long", observation="ERROR: timeout",
                     observation_error=True)
ALL = {"calc": CALC, "unknown": UNKNOWN, "parse": PARSE, "repeat": REPEAT, "final": FINAL, "raw": RAW,
       "timeout": TIMEOUT}


def matching(expression: str) -> set[str]:
    flt = parse_filter(expression)
    return {name for name, record in ALL.items() if flt.matches(record)}


@pytest.mark.parametrize("expression, expected", [
    ("~tool calc", {"calc"}),
    ("~tool cal", set()),  # exact name
    ("~tool /^ca/", {"calc", "repeat"}),  # regex form
    ("~error", {"unknown", "parse", "timeout"}),
    ("~parse", {"parse"}),
    ("~kind unknown_tool", {"unknown"}),
    ("~kind timeout", {"timeout"}),
    ("~repeat", {"repeat"}),  # an answer's counter (from any source) is not a repeated action
    ("~tripped", {"parse", "repeat"}),
    ("~guard error_budget", {"parse"}),
    ("~guard repeat", {"repeat"}),  # short aliases
    ("~final", {"final"}),
    ("~end", {"final"}),
    ("~raw", {"raw"}),
    ("~obs ^ERROR", {"unknown", "parse", "timeout"}),
    ("~obs ^2$", {"calc"}),
    ("~thought subtract", {"calc"}),
    ("~action 'calc\\[5'", {"calc"}),
    ("~args pair", {"timeout"}),  # dict arguments are searched as JSON
    ("~args gattopardo", {"unknown", "repeat"}),
    ("~answer ^2$", {"final"}),
    ("~text number", {"final"}),
    ("~text 'kv_set {key'", {"parse"}),  # the unreadable output is part of the step's text
    ("~text swe-agent", {"raw"}),
    ("~step >4", {"final", "raw", "timeout"}),
    ("~step <2", {"unknown"}),
    ("~step >=6", {"raw", "timeout"}),
    ("~step <=1", {"unknown"}),
    ("~step =3", {"parse"}),
    ("~step 3", {"parse"}),
    ("~step 2..4", {"repeat", "parse", "calc"}),
    ("~step > 6", {"timeout"}),  # a space after the operator is fine
    ("~tokens >50", {"calc"}),
    ("~tokens <39", {"unknown"}),
    ("~total >200", {"calc"}),
    ("gattopardo", {"unknown", "repeat"}),  # a bare word is ~text
    ('"I have"', {"final"}),
    ("'I search online'", {"unknown"}),
])
def test_each_filter(expression, expected):
    assert matching(expression) == expected


@pytest.mark.parametrize("expression, expected", [
    ("!~error", {"calc", "repeat", "final", "raw"}),
    ("!!~error", {"unknown", "parse", "timeout"}),
    ("~error & ~tripped", {"parse"}),
    ("~error ~tripped", {"parse"}),  # juxtaposition is and
    ("~final | ~parse", {"final", "parse"}),
    # ! binds tighter than &, which binds tighter than |
    ("~tool calc | ~error & ~tripped", {"calc", "parse"}),
    ("(~tool calc | ~error) & ~tripped", {"parse"}),
    ("!~error & ~step <5", {"calc", "repeat"}),
    ("!(~error | ~step <5)", {"final", "raw"}),
    ("~tool calc|~final", set()),  # an unquoted argument runs to whitespace: the tool "calc|~final"
    ("(~tool calc)", {"calc"}),  # a ) the argument did not open closes the group
    ("~obs (ERROR|^2$)", {"calc", "unknown", "parse", "timeout"}),  # balanced parentheses stay in a regex
    ("((~final))", {"final"}),
])
def test_operators_precedence_and_grouping(expression, expected):
    assert matching(expression) == expected


def test_smart_case():
    assert parse_filter("~obs error").matches(UNKNOWN)  # lowercase: any case
    assert parse_filter("~obs ERROR").matches(UNKNOWN)
    assert not parse_filter("~obs Error").matches(UNKNOWN)  # an uppercase letter: exact case
    assert parse_filter(r"~obs \Serror").matches(StepRecord(step=1, observation="xERROR"))  # \S is not uppercase
    assert not parse_filter("~thought I SEARCH").matches(UNKNOWN)


def test_quoting_keeps_spaces_and_escaped_quotes():
    rec = StepRecord(step=1, observation='he said "hi there" and left')
    assert parse_filter(r'~obs "said \"hi there\""').matches(rec)
    assert parse_filter("~obs 'said \"hi'").matches(rec)
    assert not parse_filter('~obs "hi  there"').matches(rec)


@pytest.mark.parametrize("expression, message", [
    ("", "empty filter"),
    ("   ", "empty filter"),
    ("~stp", "~stp: unknown filter at column 1; known: ~tool, ~error"),
    ("~error & ~stp", "~stp: unknown filter at column 10"),
    ("~", "~ at column 1 needs a filter name"),
    ("(~error | ~final", "missing ) at column 17 (to close the ( at column 1)"),
    ("(~error", "missing ) at column 8"),
    ("~error)", "unexpected ) at column 7: no ( to close"),
    ("()", "empty parentheses at column 1"),
    ("~step x", "~step needs a comparison like >10"),
    ("~step", "~step needs a comparison like >10 or 5..9 at column 1"),
    ("~step >", "~step needs a comparison"),
    ("~step 5..", "~step needs a comparison"),
    ("~tokens lots", "~tokens needs a comparison"),
    ("~tool", "~tool needs a tool name at column 1"),
    ("~tool )", "~tool needs a tool name"),
    ("~tool ~error", "~tool needs a tool name"),
    ("~kind oops", "~kind: unknown error kind 'oops'; known: unknown_tool"),
    ("~guard budget", "~guard: unknown guard 'budget'"),
    ("~obs (", "~obs: invalid regex '(' at column 6: missing )"),
    ("~obs 'a[b'", "~obs: invalid regex 'a[b' at column 8: unterminated character set"),
    ("~tool /(/", "~tool: invalid regex '/(/' at column 8: missing ), unterminated subpattern"),
    ("[abc", "invalid regex '[abc' at column 1"),
    # What linear-time matching cannot do is refused where it is written.
    ("~obs (a)\\1", "~obs: invalid regex '(a)\\\\1' at column 9: backreferences (\\1) are not supported"),
    ("~error ~obs 'x(?=y)'", "~obs: invalid regex 'x(?=y)' at column 15: lookahead (?=...) is not supported"),
    ('~thought "say \\"hi\\" (?<!no)"', "at column 22: lookbehind (?<!...) is not supported"),
    ("~tool /a(?!b)/", "~tool: invalid regex '/a(?!b)/' at column 9: lookahead (?!...) is not supported"),
    ("~action x++", "~action: invalid regex 'x++' at column 10: possessive repeats (++) are not supported"),
    ("~args (?>a)", "~args: invalid regex '(?>a)' at column 7: atomic groups (?>...) are not supported"),
    ("~obs (?P<n>a)(?P=n)", "at column 14: backreferences (?P=name) are not supported"),
    ("~obs a{1001}", "~obs: invalid regex 'a{1001}' at column 7: invalid repeat count (at most 1000)"),
    ("~obs \\u00e9", "at column 6: \\u escapes are not supported: write \\x{...}"),
    ('~obs "unclosed', 'unterminated " starting at column 6'),
    ("~error &", "& at column 8 needs a filter after it"),
    ("~error & | ~final", "& at column 8 needs a filter after it"),
    ("| ~final", "| at column 1 needs a filter before it"),
    ("~error |", "| at column 8 needs a filter after it"),
    ("!", "! at column 1 needs a filter after it"),
    ("~error !", "! at column 8 needs a filter after it"),
    ("(" * 100 + "~error" + ")" * 100, "too many nested parentheses"),
])
def test_bad_expressions_say_what_and_where(expression, message):
    with pytest.raises(ValueError) as caught:
        parse_filter(expression)
    assert message in str(caught.value)


def test_filters_print_back_as_expressions_that_parse_the_same():
    for text in ["~tool calc & !~error", "~final | ~step 2..4", '~obs "a b"', "(~error | ~repeat) ~step >3"]:
        flt = parse_filter(text)
        again = parse_filter(str(flt))
        assert str(again) == str(flt)
        assert {n for n, r in ALL.items() if flt.matches(r)} == {n for n, r in ALL.items() if again.matches(r)}


def test_help_is_generated_from_the_filter_classes():
    codes = [row[0].split()[0] for row in FILTER_HELP]
    assert set(FILTERS) <= set(codes)
    for cls in FILTERS.values():
        assert cls.code.startswith("~") and cls.help
    for required in ("~tool", "~error", "~parse", "~kind", "~repeat", "~tripped", "~guard", "~final", "~obs",
                     "~thought", "~action", "~args", "~step", "~tokens", "~raw", "~text"):
        assert required in FILTERS
    assert {"!", "&", "|"} <= set(codes)


def test_the_manual_lists_every_filter():
    manual = (ROOT / "docs" / "debugger.md").read_text(encoding="utf-8")
    for syntax, help_line in FILTER_HELP:
        if syntax.startswith("~"):  # each filter is a table row, its help as the code says it
            assert f"| `{syntax}` | {help_line} |" in manual, f"docs/debugger.md: row for {syntax} missing or stale"
        else:
            assert f"`{syntax}`" in manual, f"docs/debugger.md does not mention {syntax}"


def test_filters_over_a_real_run(sample_plans):
    run = EventRun(load_plan(sample_plans / "bad_arguments.toml").run().events)
    records = [run.record(n) for n in range(1, run.step_count + 1)]
    steps = lambda text: [r.step for r in records if parse_filter(text).matches(r)]  # noqa: E731
    assert steps("~kind bad_args") == [1, 2]
    assert steps("~parse") == [3]
    assert steps("~guard error_budget") == [3]
    assert steps("~error") == [1, 2, 3]
    assert steps("~tool kv_set & ~args force") == [2]


# --- robustness -------------------------------------------------------------------------

@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(list("~!&|()\"' \\abc.*[]>=<0123456789") + list(FILTERS) + ["\x00", "é", ".."]),
               max_size=25).map("".join))
def test_parse_raises_only_value_error(text):
    try:
        parse_filter(text)
    except ValueError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_parse_raises_only_value_error_on_any_text(text):
    try:
        parse_filter(text)
    except ValueError:
        pass


odd_values = st.one_of(
    st.none(), st.text(max_size=20), st.integers(), st.booleans(), st.floats(allow_nan=True),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.builds(object),
)
odd_records = st.builds(
    StepRecord,
    step=odd_values, events=odd_values, thought=odd_values, tool=odd_values, args=odd_values, call=odd_values,
    parse_error=odd_values, output=odd_values, error_kind=odd_values, error=odd_values,
    observation=odd_values, observation_error=odd_values, answer=odd_values, guards=odd_values,
    tripped=odd_values, recalled=odd_values, memory=odd_values, raw=odd_values, end=odd_values,
)
EVERY_FILTER = [
    "~tool calc", "~tool /c/", "~error", "~parse", "~kind timeout", "~repeat", "~tripped", "~guard repeat",
    "~final", "~end", "~obs x", "~thought x", "~action x", "~args x", "~answer x", "~text x", "~step >1",
    "~step 1..3", "~tokens >1", "~total <5", "~raw", "x", "!~error & (~step 1 | ~final)",
]


@settings(max_examples=300, deadline=None)
@given(odd_records)
def test_matching_odd_records_never_raises(record):
    for text in EVERY_FILTER:
        assert parse_filter(text).matches(record) in (True, False)


def test_matching_huge_text_and_non_records():
    huge = StepRecord(step=1, observation="x" * 5_000_000 + "needle", args={"k": ["v"] * 1000})
    assert parse_filter("~obs x").matches(huge)
    assert parse_filter("~args v").matches(huge)
    for text in EVERY_FILTER:
        assert parse_filter(text).matches(None) in (True, False)
        assert parse_filter(text).matches(object()) in (True, False)


def test_a_bare_word_is_a_regex():
    assert parse_filter("5.-.3").matches(CALC)
    assert not parse_filter("5.-.4").matches(CALC)
