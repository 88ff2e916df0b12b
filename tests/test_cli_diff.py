"""agentdbg diff A B: alignment by action, the first divergence, the listing, JSON, exit codes."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from test_cli_support import run_guarded

from agentdbg.alignment import CHANGED, EQUAL, ONLY_A, ONLY_B, Summaries, align
from agentdbg.cli import main
from agentdbg.diff import split_run
from agentdbg.engine import events as ev
from agentdbg.plans import load_plan
from agentdbg.trace import format as fmt
from agentdbg.trace.synthetic import synthetic_run
from agentdbg.trace.writer import write_trace

ROOT = Path(__file__).resolve().parents[1]
PLANS = ROOT / "sample_plans"


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def flat(text: str) -> str:
    return " ".join(text.split())


def plan_events(name: str) -> list[ev.Event]:
    return load_plan(PLANS / f"{name}.toml").run().events


def trace_of(tmp_path: Path, name: str, *runs: list[ev.Event]) -> Path:
    path = tmp_path / name
    write_trace(path, list(runs))
    return path


def with_observation(events: list[ev.Event], step: int, text: str) -> list[ev.Event]:
    return [dataclasses.replace(e, text=text) if isinstance(e, ev.Observation) and e.step == step else e
            for e in events]


def diff_json(capsys, *argv) -> tuple[int, dict]:
    code, out, err = run_cli(capsys, "diff", *argv, "--json")
    assert code in (0, 1), err
    return code, json.loads(out)


# -- the same --------------------------------------------------------------------------------


def test_a_run_and_itself_are_the_same(capsys, tmp_path) -> None:
    trace = trace_of(tmp_path, "good.jsonl", plan_events("library_good"))
    code, out, err = run_cli(capsys, "diff", trace, trace)
    assert code == 0, err
    assert "the runs are the same: 4 steps equal" in flat(out)
    assert "first divergence" not in out


def test_a_plan_and_the_trace_recorded_from_it_are_the_same(capsys, tmp_path) -> None:
    trace = trace_of(tmp_path, "good.jsonl", plan_events("library_good"))
    code, data = diff_json(capsys, PLANS / "library_good.toml", trace)
    assert code == 0
    assert data["identical"] is True and data["first_divergence"] is None
    assert data["a"]["format"] == "plan" and data["b"]["format"] == "trace"
    assert [row["kind"] for row in data["rows"]] == [EQUAL] * 4


def test_the_same_run_saved_by_another_stack_is_the_same(capsys, tmp_path) -> None:
    trace = trace_of(tmp_path, "good.jsonl", plan_events("library_good"))
    exported = tmp_path / "good.openai.json"
    code, _, err = run_cli(capsys, "convert", trace, "--to", "openai-chat", "-o", exported)
    assert code == 0, err
    code, data = diff_json(capsys, trace, exported)
    assert code == 0, data
    assert data["b"]["format"] == "openai-chat"
    assert data["counts"] == {EQUAL: 4, CHANGED: 0, ONLY_A: 0, ONLY_B: 0}


# -- what differs ---------------------------------------------------------------------------


def test_a_changed_observation_is_the_first_divergence(capsys, tmp_path) -> None:
    events = plan_events("library_good")
    a = trace_of(tmp_path, "a.jsonl", events)
    b = trace_of(tmp_path, "b.jsonl", with_observation(events, 2, "4 copies are on loan"))
    code, out, err = run_cli(capsys, "diff", a, b)
    assert code == 1, err
    text = flat(out)
    assert "1 changed" in text and "3 equal" in text
    assert "first divergence: step 2 of A and step 2 of B differ" in text
    assert "observation A: 3 B: 4 copies are on loan" in text
    assert "~ 2 2 loans[Il Gattopardo] (observation)" in text

    code, data = diff_json(capsys, a, b)
    first = data["first_divergence"]
    assert (first["row"], first["kind"], first["a_step"], first["b_step"]) == (2, CHANGED, 2, 2)
    assert first["fields"] == ["observation"]
    assert first["a"]["observation"] == "3" and first["b"]["observation"] == "4 copies are on loan"
    assert first["state"]["a"]["step"] == 2
    assert [row["kind"] for row in data["rows"]] == [EQUAL, CHANGED, EQUAL, EQUAL]
    assert data["rows"][1]["fields"] == ["observation"]


def test_an_inserted_step_is_only_in_b_and_the_rest_still_aligns(capsys) -> None:
    # The hallucinating policy first calls a tool that does not exist, then does as the good one.
    code, data = diff_json(capsys, PLANS / "library_good.toml", PLANS / "library_hallucinating.toml")
    assert code == 1
    assert [(row["kind"], row["a"], row["b"]) for row in data["rows"]] == [
        (ONLY_B, None, 1), (EQUAL, 1, 2), (EQUAL, 2, 3), (EQUAL, 3, 4), (EQUAL, 4, 5)]
    assert data["differences"] == ["step count"]
    assert data["first_divergence"]["b"]["tool"] == "web_search"
    code, out, _ = run_cli(capsys, "diff", PLANS / "library_good.toml", PLANS / "library_hallucinating.toml")
    assert "+ 1 web_search[Il Gattopardo copies]" in flat(out)
    assert "first divergence: step 1 of B has no counterpart in A (A is at step 0)" in flat(out)


def test_a_removed_step_is_only_in_a(capsys) -> None:
    code, data = diff_json(capsys, PLANS / "library_hallucinating.toml", PLANS / "library_good.toml")
    assert code == 1
    assert data["rows"][0] == {"row": 1, "kind": ONLY_A, "a": 1, "b": None}
    assert data["counts"][ONLY_A] == 1 and data["counts"][EQUAL] == 4


def test_a_different_action_in_the_same_place_is_a_changed_step(capsys, tmp_path) -> None:
    events = plan_events("library_good")
    changed = [dataclasses.replace(e, args="Il Gattopardo (1958)", call="catalog[Il Gattopardo (1958)]")
               if isinstance(e, ev.ActionTaken) and e.step == 1 else e for e in events]
    a = trace_of(tmp_path, "a.jsonl", events)
    b = trace_of(tmp_path, "b.jsonl", changed)
    code, out, _ = run_cli(capsys, "diff", a, b)
    assert code == 1
    assert "catalog[Il Gattopardo] → catalog[Il Gattopardo (1958)] (action)" in flat(out)


def test_a_different_answer_makes_the_runs_differ(capsys, tmp_path) -> None:
    events = plan_events("library_good")
    wrong = [dataclasses.replace(e, answer="3") if isinstance(e, (ev.Answered, ev.RunEnd)) else e for e in events]
    code, data = diff_json(capsys, trace_of(tmp_path, "a.jsonl", events), trace_of(tmp_path, "b.jsonl", wrong))
    assert code == 1
    assert "answer" in data["differences"]
    assert data["first_divergence"]["fields"] == ["answer"]


def test_long_equal_stretches_are_folded(capsys, tmp_path) -> None:
    events = list(synthetic_run(60))
    a = trace_of(tmp_path, "a.jsonl", events)
    b = trace_of(tmp_path, "b.jsonl", with_observation(events, 30, "something else"))
    code, out, _ = run_cli(capsys, "diff", a, b, "--context", "2")
    assert code == 1
    listed = [line for line in out.splitlines() if line.startswith("  ") and line.strip()[:1] in "=~-+…"]
    assert [line.split()[0] for line in listed] == ["…", "=", "=", "~", "=", "=", "…"]
    assert "… 27 equal steps …" in out and "… 28 equal steps …" in out
    code, out, _ = run_cli(capsys, "diff", a, b, "--all")
    assert code == 1 and "equal steps …" not in out and out.count("\n  = ") == 59


# -- choosing runs ----------------------------------------------------------------------------


def test_runs_of_one_file_are_picked_with_a_colon_or_run(capsys, tmp_path) -> None:
    path = trace_of(tmp_path, "runs.jsonl", plan_events("library_good"), plan_events("library_hallucinating"),
                    plan_events("library_good"))
    code, data = diff_json(capsys, f"{path}:1", f"{path}:2")
    assert code == 1 and (data["a"]["run"], data["b"]["run"]) == (1, 2)
    code, data = diff_json(capsys, f"{path}:1", f"{path}:3")
    assert code == 0
    other = trace_of(tmp_path, "other.jsonl", plan_events("library_good"), plan_events("library_hallucinating"))
    code, data = diff_json(capsys, path, other, "--run", "2")
    assert code == 0 and data["a"]["run"] == 2 and data["b"]["run"] == 2
    code, data = diff_json(capsys, f"{path}:3", other, "--run", "1")  # FILE:N wins over --run
    assert code == 0 and (data["a"]["run"], data["b"]["run"]) == (3, 1)


def test_a_file_named_with_a_colon_is_taken_whole(tmp_path) -> None:
    named = tmp_path / "run:2"
    named.write_text("x")
    assert split_run(str(named)) == (str(named), None)
    assert split_run(str(tmp_path / "runs.jsonl:12")) == (str(tmp_path / "runs.jsonl"), 12)
    assert split_run("plain.jsonl") == ("plain.jsonl", None)


@pytest.mark.parametrize("argv, message", [
    (["missing.jsonl", "{good}"], "missing.jsonl"),
    (["{good}:4", "{good}"], "run 4"),
    (["{good}:0", "{good}"], "runs are numbered from 1"),
    (["{good}", "{good}", "--context", "-1"], "--context -1"),
    (["{good}", "{good}", "--tui", "--json"], "choose one"),
])
def test_trouble_exits_2_with_one_line(capsys, tmp_path, argv, message) -> None:
    good = trace_of(tmp_path, "good.jsonl", plan_events("library_good"))
    code, out, err = run_cli(capsys, "diff", *[a.format(good=good) for a in argv])
    assert code == 2
    assert out == ""
    assert message in err and err.startswith("agentdbg diff: error:") and err.count("\n") == 1


def test_a_file_with_no_runs_says_why(capsys, tmp_path) -> None:
    good = trace_of(tmp_path, "good.jsonl", plan_events("library_good"))
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(fmt.header_line() + '{"type":"thought","step":1,\nnot json\n')
    code, out, err = run_cli(capsys, "diff", good, damaged)
    assert code == 2 and out == ""
    assert err.splitlines()[0] == f"agentdbg diff: error: {damaged}: no runs in it"
    assert f"agentdbg diff: warning: {damaged}:2:" in err


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs named pipes and /dev/zero")
def test_pipes_and_devices_are_refused_without_reading(tmp_path) -> None:
    good = trace_of(tmp_path, "good.jsonl", plan_events("library_good"))
    fifo, zero = tmp_path / "fifo.jsonl", tmp_path / "zero.jsonl"
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    commands = [["diff", good, fifo], ["diff", zero, good], ["diff", f"{fifo}:2", good]]
    for argv, (code, out, err) in zip(commands, run_guarded(*commands), strict=True):
        assert code == 2 and out == "" and len(err.splitlines()) == 1, (argv, err)
        assert "not a regular file" in err


def test_a_damaged_line_is_a_warning_and_the_rest_is_compared(capsys, tmp_path) -> None:
    good = trace_of(tmp_path, "good.jsonl", plan_events("library_good"))
    damaged = tmp_path / "damaged.jsonl"
    lines = good.read_text().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if '"observation"' in line and '"step":2' in line)
    lines[index] = '{"type": "observation", "step": 2, "text": \n'
    damaged.write_text("".join(lines))
    code, out, err = run_cli(capsys, "diff", good, damaged)
    assert code == 1
    assert "warning" in err and "damaged.jsonl" in err
    assert "first divergence: step 2" in flat(out)


# -- hostile text ---------------------------------------------------------------------------


def test_hostile_text_is_shown_inert(capsys, tmp_path) -> None:
    hostile = "\x1b[2J\x1b]8;;http://evil\x07[bold red]boom[/] \u202egnp.exe\x1b[0m"
    events = plan_events("library_good")
    a = trace_of(tmp_path, "a.jsonl", events)
    b = trace_of(tmp_path, "b.jsonl", with_observation(events, 1, hostile))
    code, out, err = run_cli(capsys, "diff", a, b)
    assert code == 1
    assert "\x1b" not in out + err and "\x07" not in out and "\u202e" not in out
    assert "[bold red]boom[/]" in out  # markup stays literal
    code, out, _ = run_cli(capsys, "diff", a, b, "--json")
    assert "\x1b" not in out and "\u202e" not in out
    assert json.loads(out)["first_divergence"]["b"]["observation"] == hostile


# -- the alignment itself ------------------------------------------------------------------------


def summaries(keys: list[int], contents: list[int] | None = None) -> Summaries:
    made = Summaries()
    made.keys.extend(keys)
    made.contents.extend(contents if contents is not None else keys)
    return made


def test_alignment_keeps_segments_not_rows_and_finds_each_difference() -> None:
    a = list(range(1, 10_001))
    b = a[:5000] + [99_999] + a[5000:]
    contents = list(a)
    contents[8000] = -1
    alignment = align(summaries(a, contents), summaries(b))
    assert alignment.row_count == 10_001
    assert len(alignment.segments) == 3
    assert list(alignment.hunks) == [5000, 8001]
    assert alignment.row(5000).kind == ONLY_B and alignment.row(5000).b == 5001
    assert alignment.row(8001).kind == CHANGED and (alignment.row(8001).a, alignment.row(8001).b) == (8001, 8002)
    assert alignment.next_difference(5000) == 8001 and alignment.next_difference(8001) is None
    assert alignment.next_difference(8001, forward=False) == 5000
    assert alignment.row_of_step("b", 5001) == 5000 and alignment.row_of_step("a", 5001) == 5001


def test_runs_that_loop_on_one_action_align_quickly() -> None:
    a = [7] * 30_000 + [1]
    b = [7] * 29_000 + [2] + [7] * 1000 + [1]
    alignment = align(summaries(a), summaries(b))
    counts = alignment.counts()
    assert counts[ONLY_B] == 1 and counts[EQUAL] == 30_001 - 0
    assert alignment.row(29_000).kind == ONLY_B


def test_no_steps_on_either_side() -> None:
    alignment = align(summaries([]), summaries([]))
    assert alignment.row_count == 0 and alignment.identical and alignment.first_difference is None


def test_a_different_memory_update_is_named_and_shown(capsys, tmp_path) -> None:
    events = plan_events("memory_research")
    step = next(e.step for e in events if isinstance(e, ev.MemoryUpdate) and e.added)
    changed = [dataclasses.replace(e, added=["something else entirely"])
               if isinstance(e, ev.MemoryUpdate) and e.step == step else e for e in events]
    a, b = trace_of(tmp_path, "a.jsonl", events), trace_of(tmp_path, "b.jsonl", changed)
    code, data = diff_json(capsys, a, b)
    assert code == 1
    assert data["first_divergence"]["fields"] == ["memory"] and data["first_divergence"]["a_step"] == step
    code, out, _ = run_cli(capsys, "diff", a, b)
    assert "B: added something else entirely" in flat(out)


def test_real_runs_saved_by_other_stacks(capsys, shared_fixtures) -> None:
    fever = shared_fixtures / "react-paper" / "fever_runs_first100.txt"
    code, data = diff_json(capsys, f"{fever}:1", f"{fever}:2")
    assert code == 1 and data["differences"] == ["task", "answer"]
    assert data["first_divergence"]["fields"][:3] == ["thought", "action", "observation"]
    code, data = diff_json(capsys, f"{fever}:7", f"{fever}:7")
    assert code == 0
    swe = shared_fixtures / "swe-agent"
    code, data = diff_json(capsys, swe / "sweagenttestrepo-1c2844.traj", swe / "function_calling_simple.traj")
    # The same five commands, one recorded as text and one as tool calls: they align step for step,
    # and `submit` is the same action whether its arguments are "" or {}.
    assert code == 1 and [(row["a"], row["b"]) for row in data["rows"]] == [(n, n) for n in range(1, 6)]
    assert "action" not in data["rows"][4]["fields"]


def test_arguments_nested_hundreds_deep_are_compared_without_a_traceback(capsys, tmp_path) -> None:
    good = trace_of(tmp_path, "good.jsonl", plan_events("library_good"))
    deep = tmp_path / "deep.jsonl"
    lines = good.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if '"type":"action"' in line and '"step":1' in line)
    lines[index] = '{"type":"action","step":1,"tool":"catalog","args":' + '{"x":' * 900 + "1" + "}" * 901
    deep.write_text("\n".join(lines) + "\n")
    code, out, err = run_cli(capsys, "diff", deep, good)
    assert code == 1 and "Traceback" not in err
    assert "(action)" in out
    code, data = diff_json(capsys, deep, deep)
    assert code == 0


def test_a_long_comparison_can_be_cancelled_and_reports_progress() -> None:
    from agentdbg.diff import Cancelled, compare
    from agentdbg.model.runs import EventRun

    run = EventRun(list(synthetic_run(4500)))
    seen = []
    result = compare(run, run, progress=lambda side, step: seen.append((side, step)))
    assert result.identical and seen == [("A", 2000), ("A", 4000), ("B", 2000), ("B", 4000)]
    with pytest.raises(Cancelled):
        compare(run, run, cancelled=lambda: True)


def test_runs_without_steps(capsys, tmp_path) -> None:
    empty = trace_of(tmp_path, "empty.jsonl", [ev.RunStart(0, "a task"), ev.RunEnd(0, "incomplete")])
    code, out, _ = run_cli(capsys, "diff", empty, empty)
    assert code == 0 and "the runs are the same: neither has a step" in out
    code, data = diff_json(capsys, empty, PLANS / "library_good.toml")
    assert code == 1 and data["counts"]["only in B"] == 4
    assert data["differences"] == ["task", "outcome", "answer", "verdict", "step count"]
