"""The byte-level scans (``agentdbg.trace.scan``) give exactly what decoding every step
gives: ``check`` (its counts, listed occurrences and damaged lines), ``stats``, a continue
(forward and back, automatic breaks and user breakpoints) and a search, on varied traces:
errors, repeats, budgets, parse errors, hostile and escaped text, damaged lines, step
numbers that do not match their step, invalid UTF-8, traces with and without checkpoints,
blocks cut small so that steps straddle them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentdbg.cli import check, render
from agentdbg.cli.stats import run_stats
from agentdbg.debugger import prefilter, quick
from agentdbg.debugger.breakpoints import BreakpointSet
from agentdbg.debugger.session import DebugSession
from agentdbg.engine import events as ev
from agentdbg.trace import index as trace_index
from agentdbg.trace import run as trace_run
from agentdbg.trace import scan, workers
from agentdbg.trace.reader import TraceRun, open_trace
from agentdbg.trace.writer import write_trace

HANG = 30


@pytest.fixture(autouse=True)
def workers_wanted(monkeypatch) -> None:
    """As in the headless commands: big scans may use worker processes."""
    monkeypatch.setattr(workers, "_enabled", True)

_TEXT = st.text(alphabet=st.sampled_from('ab zq "\\\n\t\x01\x7fé→\U0001f600K'), max_size=6) | st.sampled_from(
    ["zzz", "instead", "should", "1e5", "\ud800zzz", "ZZZ", "\u212a"])
_COUNT = st.integers(min_value=0, max_value=3)
_COUNTER = st.tuples(_COUNT, st.none() | _COUNT).map(list)
_EVENT = st.one_of(
    st.builds(ev.Thought, step=st.just(0), text=_TEXT),
    st.builds(ev.ActionTaken, step=st.just(0), tool=st.sampled_from(["calc", "loans", "c\"d", "zzz"]),
              args=_TEXT | st.dictionaries(_TEXT, _TEXT | st.integers() | st.none() | st.just(1e5), max_size=2),
              call=st.just("") | _TEXT),
    st.builds(ev.ParseFailed, step=st.just(0), message=_TEXT, text=_TEXT),
    st.builds(ev.StepError, step=st.just(0), kind=st.sampled_from(ev.ERROR_KINDS), message=_TEXT),
    st.builds(ev.Observation, step=st.just(0), text=_TEXT, error=st.booleans()),
    st.builds(ev.Answered, step=st.just(0), answer=_TEXT),
    st.builds(ev.GuardCounters, step=st.just(0), steps=_COUNTER, repeats=_COUNTER, errors=_COUNTER,
              tokens=_COUNTER, step_tokens=st.integers(-3, 50)),
    st.builds(ev.GuardTripped, step=st.just(0), guard=st.sampled_from(ev.GUARD_NAMES), message=_TEXT),
    st.builds(ev.MemoryUpdate, step=st.just(0), added=st.lists(_TEXT, max_size=2), summary=st.none() | _TEXT),
    st.builds(ev.Approval, step=st.just(0), tool=st.just("calc"), decision=st.sampled_from(ev.DECISIONS),
              reason=_TEXT),
    st.builds(ev.RawRecord, step=st.just(0), source=_TEXT),
    # Plans, reflections, plan items and the ids of a step's several calls.
    st.builds(ev.PlanMade, step=st.just(0), items=st.lists(_TEXT, max_size=3), revision=st.integers(1, 3)),
    st.builds(ev.Reflection, step=st.just(0), text=_TEXT, on_step=_COUNT),
    st.builds(ev.ActionTaken, step=st.just(0), tool=st.sampled_from(["calc", "zzz"]), args=_TEXT,
              id=st.sampled_from(["", "c1", "c2"]), item=_COUNT),
    st.builds(ev.Observation, step=st.just(0), text=_TEXT, error=st.booleans(), id=st.sampled_from(["c1", "c2"])),
)
# Lines put at the end of a step: damage, and valid lines that are not what they seem.
_DAMAGE = st.sampled_from([
    b"", b"", b"", b"not json\n", b'{"type":"thought","step":%d,"text":5}\n', b"\n",
    b'{"type":"guards","step":%d,"repeats":[true,null]}\n', b'{"type":"mystery","step":%d}\n',
    b'{"type":"observation","step":%d,"text":"x","error":true,"error":false}\n',
    b'{"type":"action","step":%d,"tool":"\xff","args":""}\n',
    b'{"type":"thought","step":999,"text":"a step number of another step"}\n',
    b'{"type":"thought","step":%d,"text":"\\u007a\\u007azz spelled with escapes"}\n',
    b'{"type":"thought","step":%d,"text":"crlf"}\r\n',
    b'{"type":"observation","step":%d,"text":"\xe9 not UTF-8 \xff"}\n',
    b'{"type":"guards","step":%d,"repeats":[5,null]}\n',
    b'{"type":"checkpoint","step":%d,"state":{"v":1}}\n',
])


def _trace(tmp_path: Path, steps, ended: bool, every: int, runs: int = 1) -> Path:
    all_runs = []
    for run in range(runs):
        events: list[ev.Event] = [ev.RunStart(step=0, task="t", guards={"token_budget": 100}, name=f"r{run}")]
        for number, (step_events, _) in enumerate(steps, 1):
            events.append(ev.StepStart(step=number))
            events += [type(e)(**{**e.__dict__, "step": number}) for e in step_events]
        if ended:
            events.append(ev.RunEnd(step=len(steps), outcome="budget exhausted", answer="x", steps=len(steps)))
        all_runs.append(events)
    path = tmp_path / "run.jsonl"
    write_trace(path, all_runs, checkpoint_every=every)
    data = path.read_bytes()
    for number, (_, damage) in reversed(list(enumerate(steps, 1))):
        if damage and number < len(steps):
            at = data.rfind(b'{"type":"step","step":%d}' % (number + 1))
            line = damage % number if b"%d" in damage else damage
            data = data[:at] + line + data[at:]
    path.write_bytes(data)
    return path


_STEPS = st.lists(st.tuples(st.lists(_EVENT, max_size=6), _DAMAGE), min_size=1, max_size=40)
_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                            HealthCheck.too_slow])


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch):
    monkeypatch.setattr(scan, "BLOCK_BYTES", 700)  # many blocks, steps cut across their edges
    monkeypatch.setattr(trace_run, "FAST_FOLD_AFTER", 0)


def _check_result(path: Path, names: list[str], slow: bool, monkeypatch) -> dict:
    args = argparse.Namespace(max_report=2, run=None, max_runs=100)
    with monkeypatch.context() as patch:
        if slow:
            patch.setattr(check, "_records", lambda run: ((r, None) for r in render.iter_records(run)))
        with open_trace(path) as document:
            document.wait(HANG)
            return check._check(document, names, args)


@_SETTINGS
@given(steps=_STEPS, ended=st.booleans(), every=st.sampled_from([3, 10**9]), runs=st.integers(1, 2))
def test_check_gives_what_decoding_every_step_gives(tmp_path: Path, monkeypatch, steps, ended, every, runs) -> None:
    path = _trace(tmp_path, steps, ended, every, runs)
    names = list(check.CONDITIONS)
    fast = _check_result(path, names, False, monkeypatch)
    slow = _check_result(path, names, True, monkeypatch)
    assert fast == slow


def test_check_decodes_only_the_steps_that_may_matter(tmp_path: Path, monkeypatch) -> None:
    steps = [([ev.Thought(step=0, text="t"), ev.ActionTaken(step=0, tool="calc", args="1"),
               ev.Observation(step=0, text="2"), ev.GuardCounters(step=0, repeats=[1, None])], b"")] * 300
    steps[100] = ([ev.ActionTaken(step=0, tool="x", args=""), ev.StepError(step=0, kind="unknown_tool", message="m"),
                   ev.Observation(step=0, text="ERROR", error=True)], b"")
    steps[200] = ([ev.Thought(step=0, text="t")], b'{"type":"thought","step":5,"text":"zzz"}\n')
    path = _trace(tmp_path, steps, False, 10**9)
    decoded: list[int] = []
    real = TraceRun.record
    monkeypatch.setattr(TraceRun, "record", lambda run, step: decoded.append(step) or real(run, step))
    result = _check_result(path, ["error", "repeat", "budget", "damaged"], False, monkeypatch)
    assert result["runs"][0]["counts"] == {"error": 1}
    assert any("step 5 inside step 201" in problem for problem in result["problems"])
    assert set(decoded) <= {101, 201, 300}  # the error (its message), the mismatch, the run's end


@_SETTINGS
@given(steps=_STEPS, ended=st.booleans(), every=st.sampled_from([3, 10**9]))
def test_stats_fold_gives_what_decoding_every_step_gives(tmp_path: Path, steps, ended, every) -> None:
    if every < len(steps):  # a checkpoint holds the state it was written with: no damage after it
        steps = [(events, b"") for events, _ in steps]
    path = _trace(tmp_path, steps, ended, every)
    with open_trace(path) as document:
        document.wait(HANG)
        fast = run_stats(1, document.runs[0])
    with open_trace(path) as document:
        document.wait(HANG)
        full = run_stats(1, document.runs[0], full=True)
    assert fast == full


def _breakpoints(kind: str) -> BreakpointSet:
    breakpoints = BreakpointSet()
    if kind == "user":
        for code in breakpoints.auto:
            breakpoints.auto[code] = False
        breakpoints.add("tool", "zzz")
        breakpoints.add("step", 7)
        breakpoints.add("filter", "~obs zz+ | ~step 30..31")
    elif kind == "regex":
        breakpoints.add("filter", "~text inst(ea)d & !~step 3")
    elif kind == "fields":
        for code in breakpoints.auto:
            breakpoints.auto[code] = False
        breakpoints.add("filter", "~obs 100000 | ~args 100000 | ~action True | ~args None | ~obs K")
    elif kind == "regex-only":
        for code in breakpoints.auto:
            breakpoints.auto[code] = False
        breakpoints.add("filter", "~thought zzz | ~answer shou.d")
    return breakpoints


def _stops(path: Path, kind: str, forward: bool, blocks: bool, monkeypatch) -> list:
    with monkeypatch.context() as patch:
        if not blocks:  # every step decoded
            patch.setattr(DebugSession, "_block_test", lambda self: None)
            patch.setattr(DebugSession, "_skipping", lambda self: (None, None))
        with open_trace(path) as document:
            document.wait(HANG)
            session = DebugSession(document.runs[0], _breakpoints(kind))
            if not forward:
                session.goto(session.step_count)
            stops = []
            for _ in range(60):
                stop = session.continue_forward() if forward else session.continue_back()
                stops.append((stop.step, stop.reasons))
                if not stop.at_breakpoint:
                    break
            return stops


@_SETTINGS
@given(steps=_STEPS, ended=st.booleans(), kind=st.sampled_from(["auto", "user", "regex", "regex-only", "fields"]),
       forward=st.booleans())
def test_continue_stops_where_stepping_through_every_step_stops(tmp_path: Path, monkeypatch, steps, ended, kind,
                                                                forward) -> None:
    path = _trace(tmp_path, steps, ended, 10**9)
    assert _stops(path, kind, forward, True, monkeypatch) == _stops(path, kind, forward, False, monkeypatch)


def _found(path: Path, text: str, blocks: bool, monkeypatch) -> list:
    with monkeypatch.context() as patch:
        if not blocks:  # every step decoded
            patch.setattr(quick, "regex_block_test", lambda *a: None)
            patch.setattr(quick, "regex_bytes_test", lambda *a: None)
        with open_trace(path) as document:
            document.wait(HANG)
            session = DebugSession(document.runs[0])
            hits = []
            for origin in (0, 5):
                for forward in (True, False):
                    hits.append(session.search(text, forward=forward, from_step=origin))
            return hits


@_SETTINGS
@given(steps=_STEPS, text=st.sampled_from(["zzz", "ZZZ", "zz+", "inst(ea)d", "should", "1e5|100000", "100000",
                                          "true", "True", "k", "None", "a.b", "^zzz$", "zzz\\nq", "x7f",
                                          "escapes", "(?i)ZZ"]))
def test_search_finds_what_reading_every_step_finds(tmp_path: Path, monkeypatch, steps, text) -> None:
    path = _trace(tmp_path, steps, False, 10**9)
    assert _found(path, text, True, monkeypatch) == _found(path, text, False, monkeypatch)


def test_a_word_spelled_with_escapes_is_found(tmp_path: Path) -> None:
    steps = [([ev.Thought(step=0, text="plain")], b"")] * 20
    steps[9] = ([ev.Thought(step=0, text="x")], b'{"type":"thought","step":10,"text":"\\u007a\\u007a\\u007a"}\n')
    path = _trace(tmp_path, steps, False, 10**9)
    with open_trace(path) as document:
        document.wait(HANG)
        assert DebugSession(document.runs[0]).search("zzz") == 10
        assert DebugSession(document.runs[0]).search("x\\nzzz") == 10  # across the step's two thoughts


def test_the_words_every_match_holds() -> None:
    assert prefilter.literal_set("not.there", False) == {"there"}  # (the longer of not, there)
    assert prefilter.literal_set("(?:abc)+x?yz", False) == {"abc"}
    assert prefilter.literal_set("a*b", False) == {"b"}
    assert prefilter.literal_set("foo|bar", False) == {"foo", "bar"}
    assert prefilter.literal_set("x{0,3}", False) is None
    assert prefilter.literal_set("\\Qunreadable", False) is None  # RE2 syntax Python's parser refuses: no prefilter


def test_words_that_texts_made_up_when_shown_can_hold_are_not_plain() -> None:
    for word in ("instead", "should", "denied", "True", "none", "100000", "1e5", "field"):
        assert not quick.word_is_plain(word), word
    for word in ("zzz", "Tokyo", "there"):
        assert quick.word_is_plain(word), word


def test_an_imported_run_is_checked_step_by_step(tmp_path: Path, capsys) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "calc", "arguments": "{\"e\": \"2+2\"}"}}]},
        {"role": "tool", "tool_call_id": "1", "content": "4"},
        {"role": "assistant", "content": "4"}]}))
    from agentdbg.cli import main
    code = main(["check", str(chat), "--fail-on", "error,repeat,budget", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["ok"] and out["runs"][0]["steps"] >= 1


@pytest.mark.parametrize("block_bytes", [700, 4 * 1024 * 1024])
def test_steps_too_large_for_the_pattern_or_the_block_read_the_ordinary_way(tmp_path: Path, monkeypatch,
                                                                            block_bytes: int) -> None:
    monkeypatch.setattr(scan, "BLOCK_BYTES", block_bytes)
    big = "zzz " * 20_000  # 80 KB: over FAST_STEP_BYTES (and over a 700-byte block)
    steps = [([ev.Thought(step=0, text="t"), ev.ActionTaken(step=0, tool="calc", args="1"),
               ev.GuardCounters(step=0, repeats=[1, None])], b"")] * 12
    steps[3] = ([ev.Thought(step=0, text=big), ev.ActionTaken(step=0, tool="calc", args="1"),
                 ev.StepError(step=0, kind="unknown_tool", message="m")], b"")
    steps[7] = ([ev.Observation(step=0, text=big, error=True)], b'{"type":"thought","step":2,"text":"x"}\n')
    path = _trace(tmp_path, steps, True, 10**9)
    names = list(check.CONDITIONS)
    assert _check_result(path, names, False, monkeypatch) == _check_result(path, names, True, monkeypatch)
    for kind in ("auto", "user", "regex-only"):
        for forward in (True, False):
            assert _stops(path, kind, forward, True, monkeypatch) == _stops(path, kind, forward, False, monkeypatch)
    assert _found(path, "zzz z", True, monkeypatch) == _found(path, "zzz z", False, monkeypatch)
    with open_trace(path) as document:
        document.wait(HANG)
        assert run_stats(1, document.runs[0]) == run_stats(1, document.runs[0], full=True)


def watch_decoding(run: Any, cancel: Any = None, cancel_after: int = 10) -> list[int]:
    """The steps ``run`` decodes from now on, in order (its ``record`` wrapped); with
    ``cancel``, set once ``cancel_after`` steps have been decoded."""
    decoded: list[int] = []
    real = run.record

    def record(step: int):
        decoded.append(step)
        if cancel is not None and len(decoded) == cancel_after:
            cancel.set()
        return real(step)

    run.record = record
    return decoded


def test_a_continue_over_a_block_of_many_candidates_can_be_cancelled(tmp_path: Path, monkeypatch) -> None:
    import threading

    monkeypatch.setattr(scan, "BLOCK_BYTES", 4 * 1024 * 1024)  # the whole run in one block
    steps = [([ev.Thought(step=0, text="a thought"), ev.Observation(step=0, text='a "aa"')], b"")] * 2_000
    path = _trace(tmp_path, steps, False, 10**9)
    with open_trace(path) as document:
        document.wait(HANG)
        run = document.runs[0]
        breakpoints = BreakpointSet()
        breakpoints.add("filter", "~obs (a+)+b")  # every step's text is escaped: all are decoded
        session = DebugSession(run, breakpoints)
        cancel = threading.Event()
        decoded = watch_decoding(run, cancel)
        assert session.continue_forward(cancel=cancel) is None
        assert session.cursor == 1 and len(decoded) < 300  # stopped within the block


def test_without_re2_the_scans_give_the_same_answers(tmp_path: Path, monkeypatch) -> None:
    """Where the RE2 wheel is missing, Python's engine runs the same patterns and bytes.find
    looks for the words: slower, the same steps."""
    steps = [([ev.Thought(step=0, text="t"), ev.ActionTaken(step=0, tool="calc", args="1"),
               ev.Observation(step=0, text="zzz")], b"")] * 30
    steps[5] = ([ev.StepError(step=0, kind="unknown_tool", message="m")], b'{"type":"thought","step":6,"text":"\\u007a"}\n')
    steps[9] = ([ev.Thought(step=0, text="caf\u00e9 ZZZ")], b"not json\n")
    path = _trace(tmp_path, steps, True, 10**9)
    with open_trace(path) as document:
        document.wait(HANG)
        with_re2 = [(block.candidates, block.unusual(), block.steps_holding(b"zzz", True))
                    for block in document.runs[0].step_blocks()]
    monkeypatch.setattr(scan, "_re2", None)
    monkeypatch.setattr(scan, "plain_end", scan._compile_prefix(scan.PLAIN_STEPS))
    monkeypatch.setattr(scan, "_searchable_end", None)
    monkeypatch.setattr(scan, "_escape_search", None)
    monkeypatch.setattr(scan, "_non_ascii_search", scan._compile_search(rb"[^\x00-\x7f]"))
    monkeypatch.setattr(scan, "_literal_search", lambda needle, folded: None)
    with open_trace(path) as document:
        document.wait(HANG)
        without = [(block.candidates, block.unusual(), block.steps_holding(b"zzz", True))
                   for block in document.runs[0].step_blocks()]
    assert without == with_re2
    assert any(candidates for candidates, _, _ in with_re2)


def _blocks_found(path: Path, strict: bool) -> list[tuple[Any, ...]]:
    """Each block's steps and findings (a strict scan's candidates, or a fold's)."""
    with open_trace(path) as document:
        document.wait(HANG)
        return [(block.first, block.last, block.candidates, block.suspect, None if strict else block.folds())
                for block in document.runs[0].step_blocks(strict=strict, fold=not strict)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(steps=_STEPS, ended=st.booleans())
def test_blocks_classified_in_worker_processes_are_classified_as_here(tmp_path: Path, monkeypatch, steps,
                                                                      ended) -> None:
    """A big scan classifies its blocks in other processes: the same blocks, in the same
    order, with the same candidates and suspects (block edges cut steps as in one process)."""
    monkeypatch.setattr(workers, "fork_is_safe", lambda: True)  # (the test's own threads are harmless)
    if workers.pool() is None:
        pytest.skip("no worker processes on this machine (one core, or no fork)")
    path = _trace(tmp_path, steps, ended, 10**9)
    monkeypatch.setattr(workers, "PARALLEL_BYTES", 10**12)
    alone = [_blocks_found(path, strict) for strict in (False, True)]
    monkeypatch.setattr(workers, "PARALLEL_BYTES", 0)
    apart = [_blocks_found(path, strict) for strict in (False, True)]
    assert apart == alone


def _huge_and_damaged(tmp_path: Path) -> Path:
    steps = [([ev.Thought(step=0, text="t"), ev.ActionTaken(step=0, tool="calc", args="1"),
               ev.Observation(step=0, text="2"), ev.GuardCounters(step=0, repeats=[1, None])], b"")] * 120
    steps[10] = ([ev.Thought(step=0, text="x" * 3000)], b"")  # larger than a block: a block of its own
    steps[40] = ([ev.StepError(step=0, kind="unknown_tool", message="m")], b"not json\n")
    steps[41] = ([ev.GuardCounters(step=0, repeats=[4, None])], b"")
    steps[80] = ([ev.Thought(step=0, text="t")], b'{"type":"thought","step":5,"text":"zzz"}\n')
    return _trace(tmp_path, steps, True, 10**9)


def test_check_and_stats_with_worker_processes_give_what_decoding_every_step_gives(tmp_path: Path,
                                                                                   monkeypatch) -> None:
    monkeypatch.setattr(workers, "fork_is_safe", lambda: True)  # (the test's own threads are harmless)
    if workers.pool() is None:
        pytest.skip("no worker processes on this machine (one core, or no fork)")
    path = _huge_and_damaged(tmp_path)
    alone_index = _index_found(path)
    monkeypatch.setattr(workers, "PARALLEL_BYTES", 0)
    sent: list[int] = []
    pool = workers.pool()

    class Counting:
        def submit(self, work, *args):
            sent.append(args[1])  # (the block's first step, or the piece's first byte)
            return pool.submit(work, *args)

    monkeypatch.setattr(workers, "pool", Counting)
    monkeypatch.setattr(trace_index, "FIRST_CHUNK_BYTES", 64)
    monkeypatch.setattr(trace_index, "APART_BYTES", 1000)
    assert _index_found(path) == alone_index
    assert len(sent) > 10  # the index was built there
    sent.clear()
    names = list(check.CONDITIONS)
    assert _check_result(path, names, False, monkeypatch) == _check_result(path, names, True, monkeypatch)
    with open_trace(path) as document:
        document.wait(HANG)
        fast = run_stats(1, document.runs[0])
        full = run_stats(1, document.runs[0], full=True)
    assert fast == full and fast["errors"] == 1 and fast["repeats"] == 1
    assert len(set(sent)) > 10  # the blocks did go to the workers


def _index_found(path: Path) -> tuple[Any, ...]:
    with open_trace(path) as document:
        document.wait(HANG)
        index = document.index
        return (list(index.steps), list(index.run_starts), list(index.run_first), list(index.checkpoint_offsets),
                list(index.checkpoint_positions), index.end, [str(p) for p in document.problems])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(steps=_STEPS, ended=st.booleans(), runs=st.integers(1, 3), every=st.sampled_from([2, 5, 10**9]),
       size=st.sampled_from([33, 100, 4096]))
def test_an_index_built_in_worker_processes_is_the_one_built_here(tmp_path: Path, monkeypatch, steps, ended,
                                                                  runs, every, size) -> None:
    """A big file is indexed in pieces by the workers: the same runs, steps, checkpoints,
    end and problems as the index thread finds alone, wherever the pieces' edges fall."""
    monkeypatch.setattr(workers, "fork_is_safe", lambda: True)  # (the test's own threads are harmless)
    if workers.pool() is None:
        pytest.skip("no worker processes on this machine (one core, or no fork)")
    path = _trace(tmp_path, steps, ended, every, runs)
    monkeypatch.setattr(workers, "PARALLEL_BYTES", 10**12)
    alone = _index_found(path)
    monkeypatch.setattr(workers, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(trace_index, "FIRST_CHUNK_BYTES", 64)
    monkeypatch.setattr(trace_index, "APART_BYTES", size)
    assert _index_found(path) == alone


def test_workers_that_cannot_read_the_file_leave_it_to_this_process(tmp_path: Path, monkeypatch) -> None:
    """A worker reads the file itself only while it is the same file: one renamed over the
    path (and a descriptor it did not inherit) is not read there; the scan is done here,
    with the same answers."""
    monkeypatch.setattr(workers, "fork_is_safe", lambda: True)
    if workers.pool() is None:
        pytest.skip("no worker processes on this machine (one core, or no fork)")
    path = _huge_and_damaged(tmp_path)
    alone = [_blocks_found(path, strict) for strict in (False, True)] + [_index_found(path)]
    from agentdbg.trace import source

    def elsewhere(self):  # the same path, but another file (and a descriptor it does not have)
        return workers.FileAt(self.path, 10**6, 0, 0)

    monkeypatch.setattr(workers, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(source._Source, "file_at", elsewhere)
    assert [_blocks_found(path, strict) for strict in (False, True)] + [_index_found(path)] == alone
    at = workers.FileAt(str(path), 10**6, 0, 0)
    assert workers.pool().submit(workers.read_there, at, 10, 0).result() is None


def test_a_scan_goes_on_in_this_process_when_a_worker_dies(tmp_path: Path, monkeypatch) -> None:
    """A worker killed (out of memory, a signal): the blocks not yet classified are
    classified here, and the answer is the same."""
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    class Broken:
        def __init__(self) -> None:
            self.calls = 0

        def submit(self, work, *args):
            future: Future = Future()
            self.calls += 1
            if self.calls < 4:
                future.set_result(work(*args))
            elif self.calls < 8:
                future.set_exception(BrokenProcessPool("a worker died"))
            else:
                raise BrokenProcessPool("the pool is broken")
            return future

    path = _huge_and_damaged(tmp_path)
    alone = [_blocks_found(path, strict) for strict in (False, True)]
    monkeypatch.setattr(workers, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(workers, "pool", Broken)
    monkeypatch.setattr(workers, "_workers", workers._workers)  # (a broken pool is dropped: put it back after)
    assert [_blocks_found(path, strict) for strict in (False, True)] == alone


def test_a_worker_that_fails_leaves_its_work_to_this_process(tmp_path: Path, monkeypatch) -> None:
    """A piece of work that raises in a worker (its own bug, memory) is done here, with
    the same answers; the index too."""
    from concurrent.futures import Future

    class Failing:
        def submit(self, work, *args):
            future: Future = Future()
            future.set_exception(MemoryError("a worker ran out of memory"))
            return future

    path = _huge_and_damaged(tmp_path)
    alone = [_blocks_found(path, strict) for strict in (False, True)] + [_index_found(path)]
    monkeypatch.setattr(workers, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(trace_index, "FIRST_CHUNK_BYTES", 64)
    monkeypatch.setattr(workers, "pool", Failing)
    assert [_blocks_found(path, strict) for strict in (False, True)] + [_index_found(path)] == alone


def test_workers_leave_ctrl_c_to_the_command(monkeypatch) -> None:
    """Ctrl-C reaches every process of the terminal's group: the workers ignore it, so the
    command stops alone (exit 130) and no worker prints a traceback."""
    import signal

    monkeypatch.setattr(workers, "fork_is_safe", lambda: True)
    pool = workers.pool()
    if pool is None:
        pytest.skip("no worker processes on this machine (one core, or no fork)")
    assert pool.submit(signal.getsignal, signal.SIGINT).result() == signal.SIG_IGN


def test_the_workers_can_be_turned_off(tmp_path: Path, monkeypatch) -> None:
    """AGENTDBG_SCAN_WORKERS=0 (a shared machine): big scans stay in the calling process."""
    monkeypatch.setattr(workers, "_workers", False)
    monkeypatch.setenv(workers.WORKERS_VARIABLE, "0")
    assert workers.pool() is None
    path = _huge_and_damaged(tmp_path)
    alone = [_blocks_found(path, strict) for strict in (False, True)]
    monkeypatch.setattr(workers, "PARALLEL_BYTES", 0)
    assert [_blocks_found(path, strict) for strict in (False, True)] == alone


def test_no_workers_are_forked_from_a_threaded_process(monkeypatch) -> None:
    """The debugger runs scans beside its screen's threads: forking there could deadlock a child."""
    import threading

    monkeypatch.setattr(workers, "_workers", False)
    monkeypatch.delenv(workers.WORKERS_VARIABLE, raising=False)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert workers.pool() is None
        assert workers._workers is False  # not remembered: a later single-threaded scan may still fork
    finally:
        release.set()
        other.join()


@given(sizes=st.lists(st.integers(0, 300), min_size=1, max_size=80), limit=st.integers(0, 200))
def test_the_steps_too_large_are_found_without_measuring_each_step(sizes, limit) -> None:
    starts = [0]
    for size in sizes:
        starts.append(starts[-1] + size)
    assert scan._larger_than(starts, limit) == [i for i, size in enumerate(sizes) if size > limit]


def test_a_program_using_the_library_gets_no_workers_unless_it_asks(monkeypatch) -> None:
    """Opening a big trace from a program's own code forks nothing behind its back."""
    monkeypatch.setattr(workers, "_enabled", False)
    monkeypatch.setattr(workers, "_workers", False)
    monkeypatch.setattr(workers, "fork_is_safe", lambda: True)
    workers.start(10**12)
    assert workers.pool() is None and workers._workers is False
