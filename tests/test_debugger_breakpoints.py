"""Automatic and user breakpoints: reasons on the sample plans, hit and ignore counts,
validation, and the sidecar file (round trip, damaged files)."""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentdbg.debugger import quick
from agentdbg.debugger.breakpoints import AUTO_BREAKS, Breakpoint, BreakpointSet, sidecar_path
from agentdbg.debugger.filters import parse_filter
from agentdbg.engine import events as ev
from agentdbg.plans import load_plan
from agentdbg.runs import EventRun
from agentdbg.state import StepRecord
from agentdbg.trace import format as fmt


def run_of(sample_plans, name: str) -> EventRun:
    return EventRun(load_plan(sample_plans / name).run().events)


def stops(run, breakpoints: BreakpointSet) -> dict[int, list[str]]:
    """Every step with reasons, as a continue from the start would see them."""
    found = {}
    for step in range(1, run.step_count + 1):
        reasons = breakpoints.reasons(run.record(step))
        if reasons:
            found[step] = reasons
    return found


UNKNOWN_TOOL = "tool error: tool 'web_search' does not exist, available: ['calc', 'catalog', 'loans']"


def test_automatic_breaks_on_the_hallucinating_run(sample_plans):
    assert stops(run_of(sample_plans, "library_hallucinating.toml"), BreakpointSet()) == {
        1: [UNKNOWN_TOOL],
        5: ["final answer: 2"],
    }


def test_automatic_breaks_on_the_stuck_run(sample_plans):
    assert stops(run_of(sample_plans, "library_stuck.toml"), BreakpointSet()) == {
        2: ["repeated action: catalog[Il Gattopardo] (2nd time)",
            "guard tripped: repetition: action repeated again: catalog[Il Gattopardo]"],
    }


def test_automatic_breaks_on_bad_arguments(sample_plans):
    found = stops(run_of(sample_plans, "bad_arguments.toml"), BreakpointSet())
    assert sorted(found) == [1, 2, 3]
    assert found[1] == ["tool error: bad arguments for kv_set: missing argument 'value'"]
    assert found[2][0].startswith("tool error: bad arguments for kv_set:")
    assert [r.split(":")[0] for r in found[3]] == ["parse error", "guard tripped"]
    assert "Action Input is not valid JSON" in found[3][0]
    assert found[3][1] == "guard tripped: error_budget: error budget exhausted: 3 errors in a row"


def test_automatic_breaks_on_tool_failures(sample_plans):
    found = stops(run_of(sample_plans, "tool_failures.toml"), BreakpointSet())
    assert found[1] == ["tool error: ScriptedFailure: upstream returned HTTP 503"]
    assert found[2][0] == "tool error: TimeoutError: fx_rate took longer than 0.2s"
    assert found[2][1].startswith("repeated action: fx_rate")
    # The answer step carries the last action's repeat counter but repeats nothing itself.
    assert found[4] == ["final answer: 1 EUR = 1.0843 USD"]


def test_each_automatic_break_can_be_switched_off(sample_plans):
    run = run_of(sample_plans, "tool_failures.toml")
    breakpoints = BreakpointSet()
    assert set(breakpoints.auto) == set(AUTO_BREAKS) == {"tool_error", "parse_error", "repeat", "guard", "final", "approval"}
    assert all(breakpoints.auto.values())
    assert breakpoints.toggle_auto("repeat") is False
    assert stops(run, breakpoints)[2] == ["tool error: TimeoutError: fx_rate took longer than 0.2s"]
    assert 3 not in stops(run, breakpoints)
    breakpoints.toggle_auto("tool_error")
    breakpoints.toggle_auto("final")
    assert stops(run, breakpoints) == {}
    assert breakpoints.toggle_auto("final") is True
    with pytest.raises(ValueError, match="unknown automatic break 'nope'; known: tool_error"):
        breakpoints.toggle_auto("nope")


def test_a_run_that_ends_without_an_answer_or_a_guard_stops_where_it_ended():
    record = StepRecord(step=3, error_kind="policy", error="RuntimeError: boom",
                        end=ev.RunEnd(step=3, outcome="policy error", steps=3, message="RuntimeError: boom"))
    assert BreakpointSet().reasons(record) == ["run ended: policy error: RuntimeError: boom"]


def test_reasons_are_one_clean_line():
    nasty = "line one\nline two \x1b[31mred\x1b[0m \x1b]8;;http://x\x07link\x1b]8;;\x07 " + "x" * 500
    record = StepRecord(step=1, tool="t", call="t[]", error_kind="exception", error=nasty,
                        observation="ERROR", observation_error=True)
    (reason,) = BreakpointSet().reasons(record)
    assert "\n" not in reason and "\x1b" not in reason and "\x07" not in reason
    assert reason.startswith("tool error: line one line two red link")
    assert len(reason) <= len("tool error: ") + 200 and reason.endswith("…")


def test_user_breakpoints_match_steps_tools_and_filters(sample_plans):
    run = run_of(sample_plans, "library_hallucinating.toml")
    breakpoints = BreakpointSet()
    for code in AUTO_BREAKS:
        breakpoints.toggle_auto(code)
    on_step = breakpoints.add("step", 3)
    on_tool = breakpoints.add("tool", "calc")
    on_filter = breakpoints.add("filter", "~obs ^5$ | ~final")
    assert (on_step.label, on_tool.label, on_filter.label) == ("step 3", "tool calc", "~obs ^5$ | ~final")
    assert stops(run, breakpoints) == {
        2: ["breakpoint: ~obs ^5$ | ~final"],
        3: ["breakpoint: step 3"],
        4: ["breakpoint: tool calc"],
        5: ["breakpoint: ~obs ^5$ | ~final"],
    }
    assert breakpoints.toggle(on_filter) is False
    assert stops(run, breakpoints) == {3: ["breakpoint: step 3"], 4: ["breakpoint: tool calc"]}
    breakpoints.remove(on_tool)
    assert stops(run, breakpoints) == {3: ["breakpoint: step 3"]}
    assert all(bp.hits == 0 for bp in breakpoints)  # reasons() never counts


def test_automatic_reasons_come_before_user_ones(sample_plans):
    run = run_of(sample_plans, "library_hallucinating.toml")
    breakpoints = BreakpointSet()
    breakpoints.add("tool", "web_search")
    assert breakpoints.reasons(run.record(1)) == [UNKNOWN_TOOL, "breakpoint: tool web_search"]


def test_adding_the_same_breakpoint_twice_gives_the_same_one():
    breakpoints = BreakpointSet()
    first = breakpoints.add("step", "7")
    assert breakpoints.add("step", 7) is first
    assert breakpoints.add("tool", " calc ") is breakpoints.add("tool", "calc")
    assert len(breakpoints) == 2


@pytest.mark.parametrize("kind, spec, message", [
    ("step", 0, "a step breakpoint needs a step number (1 or more), got '0'"),
    ("step", "-2", "got '-2'"),
    ("step", "three", "got 'three'"),
    ("step", True, "a step breakpoint needs a step number"),
    ("step", None, "a step breakpoint needs a step number"),
    ("tool", "", "a tool breakpoint needs a tool name"),
    ("tool", "   ", "a tool breakpoint needs a tool name"),
    ("tool", None, "a tool breakpoint needs a tool name"),
    ("filter", "", "a filter breakpoint needs a filter"),
    ("filter", "~stp", "~stp: unknown filter at column 1"),
    ("filter", "(~error", "missing ) at column 8"),
    ("line", "3", "unknown breakpoint kind 'line'; known: step, tool, filter"),
])
def test_bad_breakpoints_are_refused_with_a_readable_message(kind, spec, message):
    breakpoints = BreakpointSet()
    with pytest.raises(ValueError) as caught:
        breakpoints.add(kind, spec)
    assert message in str(caught.value)
    assert len(breakpoints) == 0


def test_toggle_step_adds_and_removes():
    breakpoints = BreakpointSet()
    assert not breakpoints.has_step(4)
    assert breakpoints.toggle_step(4) is True
    assert breakpoints.has_step(4) and not breakpoints.has_step(5)
    assert breakpoints.toggle_step(4) is False
    assert not breakpoints.has_step(4) and len(breakpoints) == 0
    breakpoints.toggle_step(4)
    breakpoints.toggle(breakpoints.step_breakpoint(4))
    assert breakpoints.has_step(4)  # a disabled breakpoint still shows in the gutter
    assert breakpoints.reasons(StepRecord(step=4)) == []


def test_hits_count_and_ignore_skips_the_next_hits():
    breakpoints = BreakpointSet()
    bp = breakpoints.add("tool", "calc")
    bp.ignore = 2
    record = StepRecord(step=1, tool="calc", call="calc[1]")
    assert breakpoints.reasons(record) == ["breakpoint: tool calc"]  # reasons ignores the ignore count
    assert bp.hits == 0
    assert breakpoints.register_hit(record) == []
    assert breakpoints.register_hit(record) == []
    assert (bp.hits, bp.ignore) == (2, 0)
    assert breakpoints.register_hit(record) == ["breakpoint: tool calc"]
    assert (bp.hits, bp.ignore) == (3, 0)
    breakpoints.toggle(bp)
    assert breakpoints.register_hit(record) == []
    assert bp.hits == 3  # a disabled breakpoint is not hit


def test_removing_keeps_every_lookup_right():
    breakpoints = BreakpointSet()
    step, calc = breakpoints.add("step", 3), breakpoints.add("tool", "calc")
    flt = breakpoints.add("filter", "~obs boom")
    breakpoints.remove(calc)
    breakpoints.remove(calc)  # not there any more: nothing happens
    record = StepRecord(step=3, tool="calc", observation="boom")
    assert breakpoints.reasons(record) == ["breakpoint: step 3", "breakpoint: ~obs boom"]
    breakpoints.remove(step)
    breakpoints.remove(flt)
    assert breakpoints.reasons(record) == [] and len(breakpoints) == 0 and not breakpoints.has_step(3)
    calc_off = breakpoints.add("tool", "calc")  # added again: a new breakpoint, found again
    assert calc_off is not calc and breakpoints.reasons(record) == ["breakpoint: tool calc"]
    assert breakpoints[0] is calc_off and breakpoints.index(calc_off) == 0
    breakpoints.clear()
    assert breakpoints.reasons(record) == [] and breakpoints.add("step", 3) is not step


def lines_run_loading(count: int) -> int:
    """Lines of breakpoints.py run while a sidecar of ``count`` breakpoints is read."""
    data = {"format": "agentdbg-breakpoints", "version": 1,
            "breakpoints": [{"kind": kind, "spec": f"{kind[0]}{n}" if kind == "tool" else str(n + 1)}
                            for n in range(count) for kind in ("step", "tool")]}
    here = BreakpointSet.from_dict.__code__.co_filename
    lines = 0

    def trace(frame, event, arg):
        nonlocal lines
        if frame.f_code.co_filename != here:
            return None
        if event == "line":
            lines += 1
        return trace

    sys.settrace(trace)
    try:
        BreakpointSet.from_dict(data)
    finally:
        sys.settrace(None)
    return lines


def test_loading_breakpoints_takes_linear_work():
    # Lines run, not seconds: a fixed count, whatever the machine. Twice the breakpoints
    # is twice the work (a scan of those already added for each new one made it four times).
    small, large = lines_run_loading(300), lines_run_loading(600)
    assert 1.9 < large / small < 2.1


def test_register_hit_keeps_automatic_reasons_while_a_user_breakpoint_is_ignored():
    breakpoints = BreakpointSet()
    bp = breakpoints.add("step", 1)
    bp.ignore = 1
    record = StepRecord(step=1, answer="42")
    assert breakpoints.register_hit(record) == ["final answer: 42"]
    assert breakpoints.register_hit(record) == ["final answer: 42", "breakpoint: step 1"]


def test_reasons_for_nothing_and_odd_records():
    breakpoints = BreakpointSet()
    breakpoints.add("step", 1)
    breakpoints.add("tool", "calc")
    breakpoints.add("filter", "~obs x")
    assert breakpoints.reasons(None) == []
    odd = StepRecord(step=[1], tool={"x": 1}, error_kind=5, guards="nonsense", observation=7, answer=None)  # type: ignore[arg-type]
    assert breakpoints.reasons(odd) == [] and breakpoints.register_hit(odd) == []


# --- the sidecar file ---------------------------------------------------------------------

def test_sidecar_path_is_beside_the_target(tmp_path):
    assert sidecar_path(tmp_path / "run.trace") == tmp_path / "run.trace.breakpoints.json"
    assert sidecar_path("plans/library.toml").name == "library.toml.breakpoints.json"


def test_save_and_load_round_trip(tmp_path):
    breakpoints = BreakpointSet()
    breakpoints.toggle_auto("repeat")
    breakpoints.add("step", 3)
    calc = breakpoints.add("tool", "calc")
    breakpoints.toggle(calc)
    flt = breakpoints.add("filter", '~obs "not found" & ~step >10')
    flt.ignore, flt.hits = 2, 9
    path = sidecar_path(tmp_path / "run.trace")
    breakpoints.save(path)
    loaded = BreakpointSet.load(path)
    assert loaded.to_dict() == breakpoints.to_dict()
    assert loaded.auto["repeat"] is False and loaded.auto["final"] is True
    assert [(b.kind, b.spec, b.enabled, b.ignore, b.hits) for b in loaded] == [
        ("step", "3", True, 0, 0), ("tool", "calc", False, 0, 0), ("filter", '~obs "not found" & ~step >10', True, 2, 0),
    ]
    assert loaded.has_step(3)
    assert loaded.reasons(StepRecord(step=11, observation="page not found")) == ['breakpoint: ~obs "not found" & ~step >10']
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == "agentdbg-breakpoints" and data["version"] == 1
    assert not list(tmp_path.glob("*.tmp"))


def test_loading_a_missing_sidecar_gives_the_defaults(tmp_path):
    loaded = BreakpointSet.load(tmp_path / "nothing.breakpoints.json")
    assert len(loaded) == 0 and all(loaded.auto.values())


def test_from_dict_accepts_a_partial_auto_table():
    loaded = BreakpointSet.from_dict({"format": "agentdbg-breakpoints", "version": 1, "auto": {"final": False}})
    assert loaded.auto == {"tool_error": True, "parse_error": True, "repeat": True, "guard": True, "final": False,
                           "approval": True}


GOOD = {"format": "agentdbg-breakpoints", "version": 1, "auto": {}, "breakpoints": []}


@pytest.mark.parametrize("content, message", [
    (b"", "not valid JSON"),
    (b"{not json", ":1: not valid JSON: Expecting property name"),
    (b"\xff\xfe\x00garbage", "not UTF-8 text"),
    (b"[1, 2]", "expected a JSON object, got list"),
    (json.dumps({"format": "something-else"}).encode(), "not an agentdbg breakpoints file"),
    (json.dumps({**GOOD, "version": 7}).encode(), "unsupported version 7"),
    (json.dumps({**GOOD, "auto": [1]}).encode(), "'auto' should be an object"),
    (json.dumps({**GOOD, "auto": {"bogus": True}}).encode(), "unknown automatic break 'bogus'"),
    (json.dumps({**GOOD, "auto": {"final": "yes"}}).encode(), "automatic break 'final' should be true or false"),
    (json.dumps({**GOOD, "breakpoints": {}}).encode(), "'breakpoints' should be a list"),
    (json.dumps({**GOOD, "breakpoints": ["step 3"]}).encode(), "breakpoint 1: expected an object"),
    (json.dumps({**GOOD, "breakpoints": [{"kind": "step", "spec": "3"}, {"kind": "step", "spec": "x"}]}).encode(),
     "breakpoint 2: a step breakpoint needs a step number (1 or more), got 'x'"),
    (json.dumps({**GOOD, "breakpoints": [{"kind": "filter", "spec": "~nope"}]}).encode(),
     "breakpoint 1: ~nope: unknown filter at column 1"),
    (json.dumps({**GOOD, "breakpoints": [{"kind": "bogus", "spec": "1"}]}).encode(), "unknown breakpoint kind 'bogus'"),
    (json.dumps({**GOOD, "breakpoints": [{"kind": "tool", "spec": "calc", "ignore": -1}]}).encode(),
     "'ignore' should be a whole number"),
    (json.dumps({**GOOD, "breakpoints": [{"kind": "tool", "spec": "calc", "enabled": "no"}]}).encode(),
     "'enabled' should be true or false"),
    (b"[" * 100_000, "breakpoints"),
])
def test_a_damaged_sidecar_is_refused_naming_the_file(tmp_path, content, message):
    path = tmp_path / "run.trace.breakpoints.json"
    path.write_bytes(content)
    with pytest.raises(ValueError) as caught:
        BreakpointSet.load(path)
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)


def test_a_sidecar_that_is_a_directory_is_refused(tmp_path):
    with pytest.raises(ValueError, match="cannot read breakpoints"):
        BreakpointSet.load(tmp_path)


def test_saving_where_it_cannot_says_so(tmp_path):
    target = tmp_path / "no such folder" / "run.trace.breakpoints.json"
    with pytest.raises(ValueError) as caught:
        BreakpointSet().save(target)
    assert str(target) in str(caught.value) and "cannot save breakpoints" in str(caught.value)


def test_breakpoint_labels():
    assert Breakpoint("step", "3").label == "step 3"
    assert Breakpoint("tool", "calc").label == "tool calc"
    assert Breakpoint("filter", "~error").label == "~error"
    with pytest.raises(ValueError):
        Breakpoint("filter", "~bad")


odd_values = st.one_of(st.none(), st.text(max_size=10), st.integers(), st.booleans(),
                       st.lists(st.integers(), max_size=2), st.builds(object))


@settings(max_examples=200, deadline=None)
@given(st.builds(StepRecord, step=odd_values, tool=odd_values, call=odd_values, args=odd_values,
                 parse_error=odd_values, error_kind=odd_values, error=odd_values, observation=odd_values,
                 observation_error=odd_values, answer=odd_values, guards=odd_values, tripped=odd_values,
                 end=odd_values, raw=odd_values))
def test_reasons_on_odd_records_never_raise(record):
    breakpoints = BreakpointSet()
    breakpoints.add("step", 1)
    breakpoints.add("tool", "calc")
    breakpoints.add("filter", "~obs x | !~error & ~step >2")
    for reason in breakpoints.reasons(record) + breakpoints.register_hit(record):
        assert isinstance(reason, str) and "\n" not in reason


# --- the byte test that lets a scan over a trace file skip decoding -------------------------

def step_lines(events) -> bytes:
    return "".join(fmt.event_line(event) for event in events).encode("utf-8")


QUIET_STEP = [
    ev.StepStart(step=7), ev.Thought(step=7, text='I "think" so: error, ~final, "type":"error"'),
    ev.ActionTaken(step=7, tool="catalog", args={"title": "error"}, call="catalog[error]"),
    ev.Observation(step=7, text="5"), ev.MemoryUpdate(step=7, added=["turn"], evicted=["old"]),
    ev.GuardCounters(step=7, steps=[7, 10], repeats=[1, 2], errors=[0, None], tokens=[90, None], step_tokens=9),
]


def test_a_quiet_step_is_skipped_and_a_breakpoint_on_it_is_not():
    data = step_lines(QUIET_STEP)
    breakpoints = BreakpointSet()
    assert breakpoints.skip_test()(7, data) is True
    breakpoints.add("step", 7)
    assert breakpoints.skip_test()(7, data) is False
    assert breakpoints.skip_test()(8, data) is True
    breakpoints.add("tool", "catalog")
    assert breakpoints.skip_test()(8, data) is False
    breakpoints.add("filter", "~step 100 | ~obs needle")
    assert breakpoints.skip_test()(8, data) is False  # the tool breakpoint still applies
    breakpoints.remove(list(breakpoints)[1])
    assert breakpoints.skip_test()(8, data) is True
    assert breakpoints.skip_test()(100, data) is False
    assert breakpoints.skip_test()(8, data.replace(b'"5"', b'"a needle"')) is False
    breakpoints.add("filter", "!~obs needle")
    assert breakpoints.skip_test() is None  # this filter needs the decoded step
    breakpoints.toggle(list(breakpoints)[-1])
    assert breakpoints.skip_test() is not None


@pytest.mark.parametrize("extra", [
    ev.StepError(step=7, kind="timeout", message="slow"),
    ev.ParseFailed(step=7, message="no action"),
    ev.Observation(step=7, text="ERROR: x", error=True),
    ev.Answered(step=7, answer="42"),
    ev.GuardTripped(step=7, guard="max_steps", message="out of steps"),
    ev.GuardCounters(step=7, repeats=[2, None]),
    ev.GuardCounters(step=7, repeats=[12, None]),
    ev.RunEnd(step=7, outcome="finished"),
    ev.RawRecord(step=7, source="x", note="unknown"),
])
def test_a_step_that_may_stop_is_decoded(extra):
    assert BreakpointSet().skip_test()(7, step_lines([*QUIET_STEP, extra])) is False


def test_unusual_lines_are_decoded():
    test = BreakpointSet().skip_test()
    assert test(7, b'{"type": "observation", "step": 7, "text": "x", "error": true}\n') is False  # spaced JSON
    assert test(7, b'{"type":"observation","step":7,"text":"x","type":"error","kind":"timeout"}\n') is False
    assert test(7, b'not json at all\n') is False
    assert test(7, b'{"type":"step","step":7}\r\n{"type":"thought","step":7,"text":"x"}\r\n') is True


TOOLS = ["calc", "loans", "we/ird", "café", "a\"b"]
step_events = st.lists(st.one_of(
    st.builds(ev.Thought, step=st.just(3), text=st.text(max_size=15)),
    st.builds(ev.ActionTaken, step=st.just(3), tool=st.sampled_from(TOOLS), args=st.text(max_size=8),
              call=st.text(max_size=8)),
    st.builds(ev.ParseFailed, step=st.just(3), message=st.text(max_size=8)),
    st.builds(ev.StepError, step=st.just(3), kind=st.sampled_from(ev.ERROR_KINDS), message=st.text(max_size=8)),
    st.builds(ev.Observation, step=st.just(3), text=st.text(max_size=15), error=st.booleans()),
    st.builds(ev.Answered, step=st.just(3), answer=st.text(max_size=5)),
    st.builds(ev.GuardCounters, step=st.just(3), repeats=st.lists(st.integers(0, 12), min_size=1, max_size=1)
              .map(lambda r: [r[0], None])),
    st.builds(ev.GuardTripped, step=st.just(3), guard=st.sampled_from(ev.GUARD_NAMES), message=st.text(max_size=5)),
    st.builds(ev.MemoryUpdate, step=st.just(3), added=st.lists(st.text(max_size=5), max_size=2)),
    st.builds(ev.RunEnd, step=st.just(3), outcome=st.sampled_from(["answered", "finished", "policy error"])),
    st.builds(ev.RawRecord, step=st.just(3), source=st.text(max_size=5)),
), max_size=8)


@settings(max_examples=400, deadline=None)
@given(step_events, st.dictionaries(st.sampled_from(list(AUTO_BREAKS)), st.booleans()),
       st.lists(st.sampled_from(TOOLS), max_size=2), st.lists(st.integers(1, 5), max_size=2))
def test_a_skipped_step_never_has_a_reason(events, auto, tools, steps):
    breakpoints = BreakpointSet()
    breakpoints.auto.update(auto)
    for tool in tools:
        breakpoints.add("tool", tool)
    for step in steps:
        breakpoints.add("step", step)
    events = [ev.StepStart(step=3), *events]
    record = StepRecord.from_events(3, events)
    if breakpoints.skip_test()(3, step_lines(events)):
        assert breakpoints.reasons(record) == []


BYTE_FILTERS = ["~step 3", "~step >5", "~tool calc", "~tool we/ird", "~tool café", "~error", "~kind timeout", "~repeat",
                "~final", "~end", "~raw", "~tripped", "~guard repeat", "~parse", "~obs calc", "~obs Calc", "~text xk",
                "~thought x", "~args loans", "~action calc", "~answer a", "calc", "KELVIN", "u200b",
                "~step 3 & ~obs a", "~tool calc | ~final", "~error ~text a",
                # no word to look for: a relaxed regex over the bytes of steps that show them as written
                "~obs a.b", "~step 3 | ~obs ^x", "~obs 'two words'", "~text k", "~text unknown", "~action True",
                "~args 100000", "~text x|b", "~obs [0-9]{2}", "~thought a\\s*b", "~text (?i)k.?a"]


def test_filters_that_can_rule_out_a_step_by_its_raw_lines():
    for text in BYTE_FILTERS:
        assert parse_filter(text).bytes_test() is not None, text
    for text in ["!~error", "~tool /c/", "~tokens >3", "~step 3 | ~obs .*", "~obs [^x]{3}", "~text \\pL",
                 "~obs [[:alpha:]]+", "~text \\n"]:
        assert parse_filter(text).bytes_test() is None, text


def test_a_word_only_a_shown_text_holds_is_never_ruled_out():
    # An event of a type this version does not know is shown as a raw record whose note
    # says so: its words are in the transcript, not in the line.
    lines = b'{"type":"step","step":1}\n{"type":"mystery","step":1}\n'
    record = StepRecord.from_events(1, [ev.StepStart(step=1), ev.event_from_dict({"type": "mystery", "step": 1})])
    assert parse_filter("~text unknown").matches(record)
    assert parse_filter("~text unknown").bytes_test()(1, lines) is True
    assert quick.regex_bytes_test("unknown", True)(lines) is True
    assert quick.regex_bytes_test("unknown", True, made_up=False)(lines) is False  # ~obs: the field itself


def test_a_word_hidden_by_case_folding_or_escapes_is_never_ruled_out():
    test = parse_filter("~obs k").bytes_test()
    assert test(1, step_lines([ev.Observation(step=1, text="\u212a")])) is True  # the Kelvin sign matches k
    assert parse_filter("~obs k").matches(StepRecord(step=1, observation="\u212a"))
    assert test(1, b'{"type":"observation","step":1,"text":"\\u006b"}\n') is True
    assert test(1, step_lines([ev.Observation(step=1, text="nothing here")])) is False
    # A call written without its text is shown as the repr of its arguments: escapes appear.
    events = [ev.StepStart(step=1), ev.ActionTaken(step=1, tool="calc", args={"k": "\U000e0001"})]
    record = StepRecord.from_events(1, events)
    assert parse_filter("~action U000e0001").matches(record)
    assert parse_filter("~action U000e0001").bytes_test()(1, step_lines(events)) is True


filter_texts = st.sampled_from(BYTE_FILTERS)
step_texts = st.text(alphabet=st.sampled_from(list("abkxcalKCL _\"\\/\n\u212a\u200bé")), max_size=12)
rich_step_events = st.lists(st.one_of(
    st.builds(ev.Thought, step=st.just(3), text=step_texts),
    st.builds(ev.ActionTaken, step=st.just(3), tool=st.sampled_from(TOOLS), args=st.one_of(step_texts, st.dictionaries(
        step_texts, step_texts, max_size=2)), call=st.one_of(st.just(""), step_texts)),
    st.builds(ev.Observation, step=st.just(3), text=step_texts, error=st.booleans()),
    st.builds(ev.Answered, step=st.just(3), answer=step_texts),
    st.builds(ev.StepError, step=st.just(3), kind=st.sampled_from(ev.ERROR_KINDS), message=step_texts),
    st.builds(ev.GuardCounters, step=st.just(3), repeats=st.integers(0, 3).map(lambda n: [n, None])),
    st.builds(ev.GuardTripped, step=st.just(3), guard=st.sampled_from(ev.GUARD_NAMES), message=step_texts),
    st.builds(ev.RawRecord, step=st.just(3), source=step_texts, note=step_texts),
), max_size=6)


@settings(max_examples=500, deadline=None)
@given(rich_step_events, filter_texts, st.integers(1, 8))
def test_a_filter_ruling_out_raw_lines_never_matches_the_step(events, text, step):
    events = [ev.StepStart(step=step), *(type(e)(**{**e.__dict__, "step": step}) for e in events)]
    record = StepRecord.from_events(step, events)
    flt = parse_filter(text)
    if not flt.bytes_test()(step, step_lines(events)):
        assert not flt.matches(record)


# --- a tool breakpoint on a name that cannot be shown as it is written ------------------------

def odd_step(tool: str) -> list[ev.Event]:
    return [ev.StepStart(step=3), ev.ActionTaken(step=3, tool=tool, args="1"),
            ev.Observation(step=3, text="1"),
            ev.GuardCounters(step=3, steps=[3, None], repeats=[1, None], errors=[0, None], tokens=[0, None])]


@pytest.mark.parametrize("tool, shown", [("calc\u200b", "calc<U+200B>"), ("c\u202eclac", "c<U+202E>clac"),
                                         ("calc\ud800", "calc<U+D800>"), ("calc\x1b[0m", "calc")])
def test_a_tool_breakpoint_matches_a_name_as_shown(tool: str, shown: str):
    record = StepRecord.from_events(3, odd_step(tool))
    breakpoints = BreakpointSet()
    breakpoints.auto = dict.fromkeys(AUTO_BREAKS, False)
    breakpoints.add("tool", shown)  # what the screen shows, and the breakpoint dialog offers
    assert breakpoints.reasons(record) == [f"breakpoint: tool {shown}"]
    data = "".join(fmt.event_line(event) for event in odd_step(tool)).encode("utf-8")
    assert breakpoints.skip_test()(3, data) is False  # a scan over a file decodes that step
    plain = step_lines(odd_step("calc"))
    assert breakpoints.skip_test()(3, plain) is (shown != "calc")


def test_a_name_that_only_looks_like_another_is_not_it():
    breakpoints = BreakpointSet()
    breakpoints.auto = dict.fromkeys(AUTO_BREAKS, False)
    breakpoints.add("tool", "calc")
    assert breakpoints.reasons(StepRecord.from_events(3, odd_step("calc\u200b"))) == []
    assert breakpoints.reasons(StepRecord.from_events(3, odd_step("calc"))) == ["breakpoint: tool calc"]
