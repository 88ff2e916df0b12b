"""Huge inputs stay bounded: many runs, a step of many events, a huge message, and the
fast stats fold over a long run without checkpoints (the same figures as decoding every
step). Sized to finish quickly; what used to hang runs in a subprocess with a timeout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentdbg.cli import main
from agentdbg.cli.stats import run_stats
from agentdbg.engine import events as ev
from agentdbg.state import RunInfo, RunState, StepRecord, Tally
from agentdbg.text import flat, one_line, shorten
from agentdbg.trace import reader
from agentdbg.trace import run as trace_run
from agentdbg.trace.reader import TraceRun, open_trace
from agentdbg.trace.synthetic import synthetic_run
from agentdbg.trace.writer import write_trace

HEADER = b'{"type":"header","format":"agentdbg-trace","version":1}\n'
HANG = 120  # seconds: far more than any of these needs, far less than a hang


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def in_subprocess(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- many runs ------------------------------------------------------------------------


def empty_runs(path: Path, count: int) -> Path:
    path.write_bytes(HEADER + b"".join(b'{"type":"run_start","step":0,"task":"episode %d"}\n' % n
                                       for n in range(1, count + 1)))
    return path


def test_a_file_of_200k_empty_runs_indexes_at_once_and_makes_only_the_runs_asked_for(tmp_path: Path) -> None:
    path = empty_runs(tmp_path / "runs.jsonl", 200_000)
    with open_trace(path) as document:
        assert document.wait(HANG)
        assert len(document.runs) == 200_000
        last = document.runs[-1]
        assert (last.info.task, last.step_count, last.complete, last.line) == ("episode 200000", 0, True, 200_001)
        assert document.runs[-1] is last
        assert len(document.runs._made) == 1  # no object for the runs nobody asked for


def test_show_any_run_of_200k_in_a_subprocess(tmp_path: Path) -> None:
    path = empty_runs(tmp_path / "runs.jsonl", 200_000)
    out = in_subprocess(f"from agentdbg.cli import main; main(['show', {str(path)!r}, '--run', '199999', '--json'])")
    assert json.loads(out)["task"] == "episode 199999"


def test_headless_commands_read_at_most_max_runs_and_say_where_the_rest_begins(tmp_path: Path, capsys) -> None:
    path = empty_runs(tmp_path / "runs.jsonl", 5)
    code, out, err = run_cli(capsys, "stats", path, "--json", "--max-runs", "3")
    assert code == 0
    result = json.loads(out)
    assert [r["task"] for r in result["runs"]] == ["episode 1", "episode 2", "episode 3"]
    assert result["problems"] == [f"{path}:5: run 4 starts here: the file has 5 runs, and only the first 3 are read "
                                  "(--max-runs N reads more, 0 all; --run N reads any one)"]
    code, out, err = run_cli(capsys, "show", path, "--max-runs", "2")
    assert code == 0 and "episode 2" in out and "episode 3" not in out and f"{path}:4: run 3 starts here" in err
    # a gate that saw part of the file does not pass
    code, out, err = run_cli(capsys, "check", path, "--max-runs", "4")
    assert code == 2 and "5 runs, more than --max-runs 4: not checked" in err
    code, out, err = run_cli(capsys, "check", path, "--max-runs", "0", "--fail-on", "error")
    assert code == 0, err
    assert run_cli(capsys, "stats", path, "--max-runs", "-1")[0] == 2


# -- a step of many events ------------------------------------------------------------


def many_events(path: Path, count: int) -> Path:
    lines = [HEADER, b'{"type":"run_start","step":0,"task":"t"}\n', b'{"type":"step","step":1}\n',
             b'{"type":"thought","step":1,"text":"first"}\n', b'{"type":"step","step":2}\n']
    lines += [b'{"type":"thought","step":2,"text":"thinking %d"}\n' % n for n in range(count)]
    lines += [b'{"type":"guards","step":2,"steps":[2,null],"tokens":[99,null]}\n',
              b'{"type":"run_end","step":2,"outcome":"answered","answer":"x","steps":2}\n']
    path.write_bytes(b"".join(lines))
    return path


def test_a_step_of_many_events_is_read_up_to_the_limit_and_the_rest_reported(tmp_path: Path) -> None:
    count = reader.MAX_STEP_EVENTS + 5_000
    path = many_events(tmp_path / "many.jsonl", count)
    with open_trace(path) as document:
        document.wait(HANG)
        (run,) = document.runs
        record = run.record(2)
        assert len(record.events) == reader.MAX_STEP_EVENTS + 1
        (note,) = record.raw
        more = count + 3 - reader.MAX_STEP_EVENTS
        assert note.note == f"{more:,} more events of this step are not read (at most 10,000 a step)"
        first_unread = 5 + reader.MAX_STEP_EVENTS  # the header, run_start, step 1 and its thought come first
        assert [str(p) for p in document.problems] == [
            f"{path}:{first_unread}: step 2 has {count + 3:,} events; the first 10,000 are shown, "
            f"the other {more:,} are not read"]
        assert run.state_at(2).raw_count == 1
        assert record.thought.split("\n")[-1] == f"thinking {reader.MAX_STEP_EVENTS - 2}"
        assert len(run.events()) == count + 6  # writing the run out loses nothing


def test_show_step_and_stats_agree_on_a_step_of_many_events(tmp_path: Path, capsys) -> None:
    path = many_events(tmp_path / "many.jsonl", reader.MAX_STEP_EVENTS + 10)
    code, out, err = run_cli(capsys, "show", path, "--step", "2")
    assert code == 0 and "events not read: 13 more events of this step are not read" in " ".join(out.split())
    assert "step 2 has 10,013 events; the first 10,000 are shown" in err
    code, out, err = run_cli(capsys, "stats", path, "--json")
    assert json.loads(out)["runs"][0]["raw_records"] == 1


def test_a_step_record_of_300k_thoughts_and_a_huge_eviction_fold_in_linear_time() -> None:
    out = in_subprocess(
        "from agentdbg.engine import events as ev\n"
        "from agentdbg.state import StepRecord, RunState, RunInfo\n"
        "n = 300_000\n"
        "events = [ev.StepStart(step=1)] + [ev.Thought(step=1, text=f't{i}') for i in range(n)]\n"
        "events += [ev.MemoryUpdate(step=1, added=[f'a{i}' for i in range(n // 2)])] * 2\n"
        "record = StepRecord.from_events(1, events)\n"
        "evict = StepRecord.from_events(2, [ev.MemoryUpdate(step=2, evicted=[f'a{i}' for i in range(n // 2 - 1, 0, -1)] * 2)])\n"
        "state = RunState.initial(RunInfo()).advance(record).advance(evict)\n"
        "print(len(record.thought.split()), list(state.memory.buffer))\n")
    assert out.split() == ["300000", "['a0',", "'a0']"]


def test_step_record_thoughts_join_as_before() -> None:
    texts = [" ", "  a ", "\n", " b\t", "", "c  "]
    events = [ev.Thought(step=1, text=t) for t in texts]
    assert StepRecord.from_events(1, events).thought == "a\n b\nc"


# -- a huge message -----------------------------------------------------------------------


def test_huge_texts_are_cut_before_they_are_cleaned() -> None:
    huge = "\x1b[31m" + "word " * 2_000_000
    assert flat(huge, 20) == "word word word word…"
    assert one_line(huge, 10) == "word word…"
    assert shorten(huge, 10) == "word word … [9,999,990 more characters]"
    assert shorten("\x1b[31mok", 10) == "ok"


def big_chat(path: Path, where: str, size: int) -> Path:
    content = ("The quick brown fox jumps over the lazy dog.\n" * (size // 45 + 1))[:size]
    messages = [{"role": "user", "content": content if where == "task" else "q"},
                {"role": "assistant", "content": "reading",
                 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": content if where == "observation" else "ok"},
                {"role": "assistant", "content": "done"}]
    path.write_text(json.dumps(messages))
    return path


@pytest.mark.parametrize("where", ["task", "observation"])
async def test_a_huge_message_is_shown_cut_in_every_pane(tmp_path: Path, where: str) -> None:
    from test_tui_support import SIZE, pane_text, press, settle

    from agentdbg.documents import open_document
    from agentdbg.tui.app import DebuggerApp

    size = 3_000_000
    path = big_chat(tmp_path / "big.json", where, size)
    app = DebuggerApp(open_document(path), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "home")
        text = pane_text(app, "scratchpad")
        assert "more characters]" in text
        assert len(app.query_one("#scratchpad").line_texts) < 2_000
        await press(pilot, "v")
        assert "more characters" in pane_text(app, "scratchpad")
        assert len(app.query_one("#scratchpad").line_texts) < 5_000


def test_show_cuts_a_huge_message_and_json_keeps_it_whole(tmp_path: Path, capsys) -> None:
    path = big_chat(tmp_path / "big.json", "observation", 300_000)
    code, out, err = run_cli(capsys, "show", path)
    assert code == 0 and "more characters]" in out and len(out) < 200_000
    code, out, err = run_cli(capsys, "show", path, "--json")
    assert len(json.loads(out)["steps"][0]["observation"]) == 300_000


# -- stats: the fast fold gives the figures of the slow one --------------------------------


def stats_by_every_path(path: Path) -> list[dict]:
    with open_trace(path) as document:
        document.wait(HANG)
        fast = [run_stats(n, run) for n, run in enumerate(document.runs, 1)]
    with open_trace(path) as document:
        document.wait(HANG)
        full = [run_stats(n, run, full=True) for n, run in enumerate(document.runs, 1)]
    assert fast == full
    return fast


def test_stats_of_a_long_run_without_checkpoints_reads_the_steps_fast(tmp_path: Path, monkeypatch) -> None:
    events = list(synthetic_run(3_000, seed=4))
    plain = tmp_path / "plain.jsonl"
    write_trace(plain, [events], checkpoint_every=10**9)
    checkpointed = tmp_path / "checkpointed.jsonl"
    write_trace(checkpointed, [events])
    expected = stats_by_every_path(checkpointed)
    decoded: list[int] = []
    real = TraceRun.record
    monkeypatch.setattr(TraceRun, "record", lambda run, step: decoded.append(step) or real(run, step))
    with open_trace(plain) as document:
        document.wait(HANG)
        assert [run_stats(1, document.runs[0])] == expected
    assert decoded == [3_000]  # only the last step, for the run's end


_TEXT = st.text(alphabet=st.sampled_from('ab "\\\n\t\x01é→\U0001f600'), max_size=6)
_COUNT = st.integers(min_value=0, max_value=3)
_COUNTER = st.tuples(_COUNT, st.none() | _COUNT).map(list)
_STEP_EVENTS = st.lists(st.one_of(
    st.builds(ev.Thought, step=st.just(0), text=_TEXT),
    st.builds(ev.ActionTaken, step=st.just(0), tool=st.sampled_from(["a", "b", "c\"d"]),
              args=_TEXT | st.dictionaries(_TEXT, _TEXT | st.integers() | st.none(), max_size=2)
              | st.just({"nested": [1]}), call=_TEXT),
    st.builds(ev.ParseFailed, step=st.just(0), message=_TEXT, text=_TEXT),
    st.builds(ev.StepError, step=st.just(0), kind=st.sampled_from(ev.ERROR_KINDS), message=_TEXT),
    st.builds(ev.Observation, step=st.just(0), text=_TEXT, error=st.booleans()),
    st.builds(ev.Answered, step=st.just(0), answer=_TEXT),
    st.builds(ev.GuardCounters, step=st.just(0), steps=_COUNTER, repeats=_COUNTER, errors=_COUNTER,
              tokens=_COUNTER, step_tokens=st.integers(-3, 50)),
    st.builds(ev.GuardTripped, step=st.just(0), guard=st.sampled_from(ev.GUARD_NAMES), message=_TEXT),
    st.builds(ev.MemoryUpdate, step=st.just(0), added=st.lists(_TEXT, max_size=2), summary=st.none() | _TEXT),
    st.builds(ev.MemoryRecall, step=st.just(0), query=_TEXT,
              results=st.lists(st.fixed_dictionaries({"text": _TEXT, "score": st.floats(0, 1)}), max_size=2)),
    st.builds(ev.RawRecord, step=st.just(0), source=_TEXT),
), max_size=7)
_DAMAGE = st.sampled_from([b"", b"not json\n", b'{"type":"thought","step":1,"text":5}\n', b"\n",
                           b'{"type":"guards","step":1,"repeats":[true,null]}\n', b'{"type":"mystery","step":1}\n',
                           b'{"type":"observation","step":1,"text":"x","error":true,"error":false}\n',
                           b'{"type":"action","step":1,"tool":"\xff","args":""}\n'])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(_STEP_EVENTS, _DAMAGE), min_size=1, max_size=80), ended=st.booleans(),
       every=st.sampled_from([3, 10**9]))
def test_fast_stats_equal_stats_from_every_step_decoded(tmp_path: Path, monkeypatch, steps, ended: bool,
                                                        every: int) -> None:
    monkeypatch.setattr(trace_run, "FAST_FOLD_AFTER", 0)  # the fast fold for every run, however short
    events: list[ev.Event] = [ev.RunStart(step=0, task="t", guards={"token_budget": 100})]
    for number, (step_events, _) in enumerate(steps, 1):
        events.append(ev.StepStart(step=number))
        events += [type(e)(**{**e.__dict__, "step": number}) for e in step_events]
    if ended:
        events.append(ev.RunEnd(step=len(steps), outcome="answered", answer="x", steps=len(steps)))
    path = tmp_path / "run.jsonl"
    write_trace(path, [events], checkpoint_every=every)
    # damage: a line added at the end of some steps (not with checkpoints, which were
    # folded before the damage and so, by design, do not count it)
    data = path.read_bytes()
    for number, (_, damage) in reversed(list(enumerate(steps, 1))):
        if damage and number < len(steps) and every > len(steps):
            at = data.index(b'{"type":"step","step":%d}' % (number + 1))
            data = data[:at] + damage + data[at:]
    path.write_bytes(data)
    stats_by_every_path(path)


def test_tally_adds_a_step_as_run_state_advances() -> None:
    record = StepRecord.from_events(3, [
        ev.ActionTaken(step=3, tool="a", args=""), ev.StepError(step=3, kind="bad_args", message="m"),
        ev.GuardCounters(step=3, steps=[3, 9], repeats=[2, 3], errors=[1, None], tokens=[40, 100], step_tokens=7),
        ev.GuardTripped(step=3, guard="repetition", message="again"), ev.RawRecord(step=3)])
    state = RunState.initial(RunInfo(guards={"max_steps": 9}))
    tally = Tally.from_state(state)
    tally.add(record)
    assert tally == Tally.from_state(state.advance(record))


async def test_the_run_switcher_lists_runs_around_the_current_and_opens_any_by_number(tmp_path: Path) -> None:
    from test_tui_support import SIZE, press, settle, type_text
    from textual.widgets import OptionList

    from agentdbg.tui.app import DebuggerApp
    from agentdbg.tui.screens.lists import RUN_LIST

    path = empty_runs(tmp_path / "runs.jsonl", RUN_LIST + 100)
    app = DebuggerApp(open_trace(path), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "r")
        assert app.screen.query_one(OptionList).option_count == RUN_LIST
        await pilot.click("#run-filter")
        await type_text(pilot, str(RUN_LIST + 90))
        await press(pilot, "enter")
        assert app.run_index == RUN_LIST + 89
        assert f"episode {RUN_LIST + 90}" in app.query_one("#header").text
