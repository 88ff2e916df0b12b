"""User-supplied regular expressions: linear-time matching, clear errors with columns, the
guarded fallback to Python's re, and every place a pattern comes from (filters, search,
the breakpoints sidecar, a rules plan's ``when``).

The catastrophic patterns here would take a backtracking engine hours on these texts (the
work doubles with each ``a``); linear matching answers at once, so the tests finish."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentdbg import regex
from agentdbg.debugger.breakpoints import BreakpointSet, sidecar_path
from agentdbg.debugger.filters import parse_filter
from agentdbg.debugger.find import literal_reason, search_pattern
from agentdbg.debugger.session import DebugSession
from agentdbg.engine import events as ev
from agentdbg.plans import PlanError, load_plan
from agentdbg.runs import EventRun

EXPLOSIVE = "a" * 40 + "!"  # (a+)+$ backtracks 2**40 times on this
CATASTROPHIC = ["(a+)+$", "(a|a)+$", "(a|aa)+$", "^(\\w+ ?)*$", "(?:a*)*b", "(.*a){42}"]

needs_re2 = pytest.mark.skipif(regex.ENGINE != regex.RE2, reason="google-re2 is not importable here")


@pytest.fixture
def fallback(monkeypatch):
    """Patterns compiled while this is active use Python's re, as without google-re2."""
    monkeypatch.setattr(regex, "ENGINE", regex.STDLIB)


# --- the engine -----------------------------------------------------------------------------

@needs_re2
@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_catastrophic_patterns_answer_at_once(pattern):
    compiled = regex.compile(pattern)
    assert compiled.search(EXPLOSIVE) is None
    assert compiled.search("\n".join([EXPLOSIVE] * 25_000)) is None  # a megabyte of such lines


@needs_re2
def test_a_long_line_of_spaces_against_stacked_repeats():
    assert regex.compile(r"\s*\s*\s*x$").search(" " * 1_000_000) is None
    assert regex.compile(r"(?s).*.*=").search("a" * 1_000_000) is None


def test_smart_case_and_line_anchors():
    assert regex.compile_smart("error").search("an ERROR")
    assert not regex.compile_smart("Error").search("an ERROR")
    assert regex.compile_smart(r"\S+ \W").search("AB !")  # escapes are not capitals
    assert regex.compile_smart(r"\p{Greek}x").flags & re.IGNORECASE
    assert regex.compile_smart(r"(?P<Name>x)").flags & re.IGNORECASE  # nor are group names
    assert not regex.compile_smart(r"[A-Z]x").flags & re.IGNORECASE
    assert regex.compile_smart("^two$").search("one\ntwo\nthree")
    assert not regex.compile("a.b").search("a\nb")  # . stays on its line
    assert regex.compile("(?s)a.b").search("a\nb")
    assert regex.compile(r"end\Z").search("the end") and not regex.compile(r"end\Z").search("end\nmore")


def test_a_pattern_keeps_its_text_and_re_flags():
    compiled = regex.compile_smart("timeout")
    assert compiled.pattern == "timeout"
    assert compiled.flags == re.MULTILINE | re.IGNORECASE
    assert regex.compile_smart("Timeout").flags == re.MULTILINE


def test_groups_and_match_positions():
    compiled = regex.compile(r"(\d+)-(\d+)")
    match = compiled.search("range 3-7 here")
    assert compiled.groups == 2
    assert (match.group(0), match.group(1), match.group(2), match.start(), match.end()) == ("3-7", "3", "7", 6, 9)


@pytest.mark.parametrize("engine", [regex.RE2, regex.STDLIB])
def test_found_agrees_with_search(monkeypatch, engine):
    if engine == regex.RE2 and regex.ENGINE != regex.RE2:
        pytest.skip("google-re2 is not importable here")
    monkeypatch.setattr(regex, "ENGINE", engine)
    texts = ["", "a\nb", "caf\u00e9 CAF\u00c9", "x \ud800 xx", "ERROR: tool 'web_search' does not exist"]
    for pattern in ["", "^b$", "\u00e9", "caf\u00c9", "x+", "does not", "^$", "nothing", "(?s)a.b"]:
        compiled = regex.compile_smart(pattern)
        for text in texts:
            assert compiled.found(text) == (compiled.search(text) is not None), (pattern, text)


def test_text_with_lone_surrogates_is_searched():
    match = regex.compile("x+").search("\ud800 xx \udfff")
    assert (match.start(), match.end()) == (2, 4)


def test_escape_matches_literally():
    text = "a+b (c) [d] \\ é $"
    assert regex.compile(regex.escape(text)).search(f"-- {text} --")


@needs_re2
def test_nothing_is_printed_on_a_bad_pattern(capfd):
    with pytest.raises(regex.RegexError):
        regex.compile("(?=x)(")
    with pytest.raises(regex.RegexError):
        regex.compile("a{2,1}")
    assert capfd.readouterr() == ("", "")


# --- errors say what and where ------------------------------------------------------------------

@needs_re2
@pytest.mark.parametrize("pattern, column, reason", [
    (r"(a)\1", 4, r"backreferences (\1) are not supported"),
    ("x(?=y)", 2, "lookahead (?=...) is not supported"),
    ("x(?!y)", 2, "lookahead (?!...) is not supported"),
    ("xy(?<=a)", 3, "lookbehind (?<=...) is not supported"),
    ("(?<!a)b", 1, "lookbehind (?<!...) is not supported"),
    ("(?>ab)", 1, "atomic groups (?>...) are not supported"),
    ("(?P<n>a)(?P=n)", 9, "backreferences (?P=name) are not supported"),
    ("a++", 2, "possessive repeats (++) are not supported"),
    ("(?(1)a|b)", 1, "conditionals"),
    ("(?x) a", 1, "the inline flag 'x' is not supported"),
    (r"caf\u00e9", 4, r"\u escapes are not supported"),
    ("ab(cd", 3, "missing ), unterminated subpattern"),
    ("ab)cd", 3, "unbalanced parenthesis"),
    ("x[ab", 2, "unterminated character set"),
    ("xy{1001}", 3, "invalid repeat count (at most 1000)"),
    ("[z-a]", 2, "invalid range in a character set"),
    ("a**", 2, "a repeat of a repeat"),
    ("x\\", 2, "the pattern ends with a lone \\"),
    ("\ud800", 1, "a lone surrogate (U+D800) is not a character"),
])
def test_unsupported_and_invalid_patterns_name_the_column(pattern, column, reason):
    with pytest.raises(regex.RegexError) as caught:
        regex.compile(pattern)
    assert caught.value.reason.startswith(reason)
    assert caught.value.offset == column - 1
    assert str(caught.value).endswith(f"(at column {column})")


def test_a_huge_pattern_is_refused_without_being_read():
    with pytest.raises(regex.RegexError, match="too long"):
        regex.compile_smart("a" * (regex.MAX_LENGTH + 1))


@needs_re2
def test_a_pattern_too_big_to_compile_is_refused():
    with pytest.raises(regex.RegexError, match="too large"):
        regex.compile(r"(?:\pL{0,200}\s){5}QQQ")


# --- the fallback: Python's re, guarded -------------------------------------------------------

@pytest.mark.parametrize("pattern, column", [
    ("(a+)+$", 5), (r"(\w*\s)*", 8), ("((a+))+", 7), ("x(?:a*b?){2,}", 10), (r"(a+){30}", 5),
])
def test_the_fallback_refuses_nested_repetition_where_it_is(fallback, pattern, column):
    with pytest.raises(regex.RegexError) as caught:
        regex.compile(pattern)
    assert "nested repetition" in caught.value.reason and "google-re2" in caught.value.reason
    assert caught.value.offset == column - 1


def test_the_fallback_keeps_everything_else_of_python_re(fallback):
    compiled = regex.compile(r"(a)\1|(?<=x)y")
    assert compiled.engine == regex.STDLIB
    assert compiled.search("xaa") and compiled.search("xy")
    assert regex.compile("(a|b)*c").search("ababc")
    with pytest.raises(regex.RegexError) as caught:
        regex.compile("ab(cd")
    assert caught.value.offset == 2


def test_the_fallback_looks_at_a_bounded_part_of_a_text(fallback):
    limit = regex.FALLBACK_SEARCH_LIMIT
    compiled = regex.compile("needle")
    assert compiled.search(" " * (limit - 6) + "needle")
    assert not compiled.search(" " * limit + "needle")


def test_filters_in_the_fallback_refuse_nested_repetition_with_the_column(fallback):
    with pytest.raises(ValueError, match=r"~obs: invalid regex '\(a\+\)\+\$' at column 10: nested repetition"):
        parse_filter("~obs (a+)+$")


# --- every source of patterns ----------------------------------------------------------------

def explosive_run(steps: int = 6) -> EventRun:
    """A run whose observations would take a backtracking (a+)+$ hours; step 4 ends in a's."""
    events: list[ev.Event] = [ev.RunStart(step=0, task="count")]
    for step in range(1, steps + 1):
        text = "a" * 40 if step == 4 else EXPLOSIVE
        events += [ev.StepStart(step=step), ev.ActionTaken(step=step, tool="calc", args=str(step)),
                   ev.Observation(step=step, text=text)]
    return EventRun(events)


@needs_re2
def test_a_filter_with_a_catastrophic_regex_stops_where_it_matches():
    breakpoints = BreakpointSet()
    breakpoints.auto = dict.fromkeys(breakpoints.auto, False)
    breakpoints.add("filter", "~obs (a+)+$ | ~text (x|x)*y")
    session = DebugSession(explosive_run(), breakpoints)
    stop = session.continue_forward()
    assert stop.step == 4 and stop.reasons == ["breakpoint: ~obs (a+)+$ | ~text (x|x)*y"]
    assert session.continue_forward().reasons == ["end of run"]
    assert session.continue_back().step == 4


@needs_re2
def test_a_sidecar_with_a_catastrophic_filter_loads_and_works(tmp_path):
    trace = tmp_path / "run.jsonl"
    sidecar_path(trace).write_text(json.dumps({
        "format": "agentdbg-breakpoints", "version": 1,
        "auto": {"tool_error": False, "parse_error": False, "repeat": False, "guard": False, "final": False},
        "breakpoints": [{"kind": "filter", "spec": "~obs (a+)+$", "enabled": True}],
    }), encoding="utf-8")
    breakpoints = BreakpointSet.load(sidecar_path(trace))
    assert DebugSession(explosive_run(), breakpoints).continue_forward().step == 4


@needs_re2
def test_a_sidecar_with_an_unsupported_regex_is_refused_with_file_breakpoint_and_column(tmp_path):
    path = sidecar_path(tmp_path / "run.jsonl")
    path.write_text(json.dumps({
        "format": "agentdbg-breakpoints", "version": 1,
        "breakpoints": [{"kind": "step", "spec": "2"}, {"kind": "filter", "spec": "~obs (a)\\1"}],
    }), encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        BreakpointSet.load(path)
    assert str(caught.value) == (f"{path}: breakpoint 2: ~obs: invalid regex '(a)\\\\1' at column 9: "
                                 "backreferences (\\1) are not supported")


@needs_re2
def test_search_with_a_catastrophic_regex_finds_the_step():
    session = DebugSession(explosive_run())
    assert session.search("(a+)+$") == 4
    assert session.search("(a|aa)+$", forward=False) == 4


@needs_re2
def test_search_for_an_unsupported_regex_looks_for_it_literally_and_says_why():
    events = [ev.RunStart(step=0, task="t"), ev.StepStart(step=1), ev.Observation(step=1, text="plain"),
              ev.StepStart(step=2), ev.Observation(step=2, text="said (a)\\1 twice")]
    session = DebugSession(EventRun(events))
    assert session.search("(a)\\1") == 2
    assert literal_reason("(a)\\1") == "backreferences (\\1) are not supported (at column 4)"
    assert literal_reason("(a+)+$") is None
    assert search_pattern("x(?=y)").search("x(?=y)")


RULES_PLAN = '''task = "{task}"

[[tools]]
name = "calc"
kind = "calculator"

[policy]
kind = "rules"

[[policy.rules]]
when = '{when}'
say = "Final Answer: found {{1}}"

[[policy.rules]]
say = "Final Answer: nothing"
'''


@needs_re2
def test_a_rules_plan_with_a_catastrophic_when_runs(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text(RULES_PLAN.format(task=EXPLOSIVE, when="(a+)+$"), encoding="utf-8")
    assert load_plan(path).run().outcome.answer == "nothing"
    path.write_text(RULES_PLAN.format(task="a" * 40, when="^Question: (a+)+$"), encoding="utf-8")
    assert load_plan(path).run().outcome.answer == "found " + "a" * 40


@needs_re2
def test_a_rules_plan_with_lookaround_is_refused_with_line_and_column(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text(RULES_PLAN.format(task="t", when="x(?<=y)"), encoding="utf-8")
    with pytest.raises(PlanError) as caught:
        load_plan(path)
    assert str(caught.value) == (f"{path}:11: [[policy.rules]] #1: invalid regular expression 'x(?<=y)' "
                                 "at column 2: lookbehind (?<=...) is not supported")


def test_the_engine_modules_take_user_patterns_from_one_place():
    root = Path(__file__).resolve().parents[1] / "agentdbg"
    for path in (root / "engine" / "policies.py", root / "debugger" / "filters.py", root / "debugger" / "find.py"):
        text = path.read_text(encoding="utf-8")
        assert "from agentdbg import regex" in text, path
        assert "re.compile(when" not in text and "re.compile(pattern" not in text, path
