"""``agentdbg fork``: the fork as a trace, byte-identical on a re-run for deterministic
plans, and a clear refusal (exit 2, one line) for runs whose policy cannot be re-run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentdbg.cli import main
from agentdbg.documents import open_document
from agentdbg.trace.reader import open_trace

ROOT = Path(__file__).resolve().parents[1]
PLANS = ROOT / "sample_plans"
OFFLINE_PLANS = sorted(p for p in PLANS.rglob("*.toml") if "models" not in p.parts)
EVERY_STEP_UP_TO = 60  # a longer run (the 200-step reactive grid agent) is forked at every 25th step


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def edit_for(record) -> tuple[str, str]:
    if record.observation is not None and record.tool is not None:
        return "--observation", "an edited observation"
    if record.parse_error is None:
        return "--thought", "an edited thought"
    return "--action", "Final Answer: edited"


def steps_to_fork(count: int) -> list[int]:
    if count <= EVERY_STEP_UP_TO:
        return list(range(1, count + 1))
    return sorted({1, 2, count - 1, count, *range(25, count, 25)})


@pytest.mark.parametrize("plan", OFFLINE_PLANS, ids=lambda p: str(p.relative_to(PLANS)))
def test_forking_a_sample_plan_at_each_step_twice_gives_the_same_bytes(plan, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # append_once writes ledger.txt in the current directory
    document = open_document(plan, allow_code=True, live=False, approve="always")
    parent = document.runs[0]
    flags = ["--allow-code", "--approve", "always", "-q"]
    for step in steps_to_fork(parent.step_count):
        record = parent.record(step)
        option, text = edit_for(record)
        written = []
        for attempt in (1, 2):
            out = tmp_path / f"fork-{step}-{attempt}.jsonl"
            code, _, err = run_cli(capsys, "fork", plan, "--step", step, option, text, "-o", out, *flags)
            assert code == 0, f"step {step}: {err}"
            written.append(out.read_bytes())
        assert written[0] == written[1], f"{plan.name}: the fork at step {step} differs between two runs"
        with open_trace(tmp_path / f"fork-{step}-1.jsonl", background=False) as trace:
            assert len(trace.runs) == 2
            assert trace.runs[1].info.fork["step"] == step and not trace.problems


def test_the_fork_trace_holds_the_parent_then_the_fork_and_opens_in_show(tmp_path, capsys):
    trace = tmp_path / "run.jsonl"
    assert run_cli(capsys, "record", PLANS / "library_hallucinating.toml", "-o", trace)[0] == 0
    out = tmp_path / "fork.jsonl"
    code, said, err = run_cli(capsys, "fork", trace, "--step", 2, "--observation", "7", "-o", out)
    assert code == 0, err
    assert "fork of run 1 at step 2: observation edited: 5 steps, answered: 2" in " ".join(said.split())
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    starts = [line for line in lines if line["type"] == "run_start"]
    assert len(starts) == 2 and "fork" not in starts[0]
    assert starts[1]["fork"] == {"parent": 1, "step": 2, "edited": "observation", "text": "7"}
    original = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()[1:]]
    assert lines[1:len(original) + 1] == original  # the parent, as recorded
    code, shown, _ = run_cli(capsys, "show", out, "--run", 2)
    assert code == 0 and "Observation  7" in shown


def test_a_plan_is_run_then_forked(tmp_path, capsys):
    out = tmp_path / "fork.jsonl"
    code, _, err = run_cli(capsys, "fork", PLANS / "kv_tax.toml", "--step", 2,
                           "--action", 'calculator {"expr": "120 * 0.2"}', "-o", out)
    assert code == 0, err
    with open_trace(out, background=False) as trace:
        assert trace.runs[1].record(2).observation == "24.0"
        assert trace.runs[0].record(2).observation == "18.0"


@pytest.mark.parametrize(("argv", "message"), [
    (["--step", "2", "--action", "catalog[["], "--action: invalid format 'catalog[[', use Action: name[argument]"),
    (["--step", "5", "--observation", "x"], "step 5 has no observation to edit: it is the final answer"),
    (["--step", "0", "--thought", "x"], "--step must be 1 or more"),
    (["--step", "2", "--thought", "x", "--run", "3"], "--run 3: "),
])
def test_mistakes_exit_2_with_one_line_and_write_nothing(argv, message, tmp_path, capsys):
    out = tmp_path / "fork.jsonl"
    code, _, err = run_cli(capsys, "fork", PLANS / "library_hallucinating.toml", *argv, "-o", out)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_an_imported_run_cannot_be_forked_and_says_why(tmp_path, capsys):
    source = ROOT / "tests" / "fixtures"
    traj = next(iter(sorted(source.rglob("*.traj"))), None)
    if traj is None:
        pytest.skip("no SWE-agent fixture in tests/fixtures")
    code, _, err = run_cli(capsys, "fork", traj, "--step", 1, "--thought", "x", "-o", tmp_path / "f.jsonl")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "its policy cannot be re-run here" in err and "this run was recorded from" in err


def test_a_trace_whose_plan_moved_names_the_plan_option(tmp_path, capsys):
    plan = tmp_path / "p.toml"
    shutil.copy(PLANS / "library_hallucinating.toml", plan)
    trace = tmp_path / "run.jsonl"
    assert run_cli(capsys, "record", plan, "-o", trace)[0] == 0
    moved = tmp_path / "moved.toml"
    plan.rename(moved)
    code, _, err = run_cli(capsys, "fork", trace, "--step", 2, "--observation", "7", "-o", tmp_path / "f.jsonl")
    assert code == 2 and "which is not found here; its policy cannot be re-run here" in err
    code, _, err = run_cli(capsys, "fork", trace, "--step", 2, "--observation", "7", "-o", tmp_path / "f.jsonl",
                           "--plan", moved)
    assert code == 0, err


def test_an_existing_output_is_kept_without_force(tmp_path, capsys):
    out = tmp_path / "fork.jsonl"
    out.write_text("mine\n")
    code, _, err = run_cli(capsys, "fork", PLANS / "library_good.toml", "--step", 1, "--thought", "x", "-o", out)
    assert code == 2 and "exists; use --force" in err and out.read_text() == "mine\n"


def test_a_dangerous_plan_needs_approve(tmp_path, capsys):
    code, _, err = run_cli(capsys, "fork", PLANS / "dangerous_delete.toml", "--step", 1, "--thought", "x",
                           "-o", tmp_path / "f.jsonl")
    assert code == 2 and "--approve" in err


MODEL_PLAN = """\
task = "What is 6 * 7?"
calls_model = true

[[tools]]
name = "calc"
kind = "calculator"

[policy]
kind = "openai"
model = "test-model"
base_url = "http://127.0.0.1:9/v1"
"""


def model_trace(tmp_path: Path) -> Path:
    """A trace as recording the model plan above would have written it (no server needed)."""
    from agentdbg.engine import events as ev
    from agentdbg.trace.writer import write_trace

    plan = tmp_path / "model.toml"
    plan.write_text(MODEL_PLAN, encoding="utf-8")
    events = [ev.RunStart(step=0, task="What is 6 * 7?", source=str(plan), policy="openai: test-model"),
              ev.StepStart(step=1), ev.Thought(step=1, text="multiply"),
              ev.ActionTaken(step=1, tool="calc", args="6 * 7", call="calc[6 * 7]"),
              ev.Observation(step=1, text="42"), ev.StepStart(step=2), ev.Answered(step=2, answer="42"),
              ev.RunEnd(step=2, outcome="answered", answer="42", steps=2)]
    trace = tmp_path / "model.jsonl"
    write_trace(trace, [events])
    return trace


def test_a_model_run_without_allow_network_says_it_cannot_be_re_run(tmp_path, capsys):
    trace = model_trace(tmp_path)
    code, _, err = run_cli(capsys, "fork", trace, "--step", 1, "--observation", "41", "-o", tmp_path / "f.jsonl")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "whose policy calls a model; its policy cannot be re-run here without --allow-network" in err
    assert not (tmp_path / "f.jsonl").exists()


def test_append_adds_the_fork_to_the_trace_itself_naming_its_parent_there(tmp_path, capsys):
    trace = tmp_path / "run.jsonl"
    assert run_cli(capsys, "record", PLANS / "library_hallucinating.toml", "-o", trace)[0] == 0
    before = trace.read_bytes()
    code, said, err = run_cli(capsys, "fork", trace, "--step", 2, "--observation", "7", "--append")
    assert code == 0, err
    assert "fork of run 1 at step 2: observation edited" in said and "(run 2;" in said
    code, said, err = run_cli(capsys, "fork", trace, "--run", 2, "--step", 4, "--observation", "1", "--append")
    assert code == 0, err
    assert "(run 3;" in said
    assert trace.read_bytes().startswith(before)  # the runs there are kept as they were
    with open_trace(trace, background=False) as opened:
        assert [run.info.fork and run.info.fork["parent"] for run in opened.runs] == [None, 1, 2]
        third = opened.runs[2]
        assert (third.record(2).observation, third.record(4).observation) == ("7", "1")
        assert third.info.fork["replays"] == [{"step": 2, "edited": "observation", "text": "7"}]


def test_append_needs_a_trace_and_o_may_not_name_the_input(tmp_path, capsys):
    code, _, err = run_cli(capsys, "fork", PLANS / "kv_tax.toml", "--step", 1, "--thought", "x", "--append")
    assert code == 2 and "is a plan, not a trace; write the fork with -o" in err
    trace = tmp_path / "run.jsonl"
    assert run_cli(capsys, "record", PLANS / "kv_tax.toml", "-o", trace)[0] == 0
    code, _, err = run_cli(capsys, "fork", trace, "--step", 1, "--thought", "x", "-o", trace)
    assert code == 2 and "would overwrite its input (--append adds it to a trace)" in err


def test_fork_takes_a_new_plan_and_one_call_s_observation_of_several(tmp_path, capsys):
    written = []
    for out in (tmp_path / "plan.jsonl", tmp_path / "plan-again.jsonl"):
        code, _, err = run_cli(capsys, "fork", PLANS / "kv_tax_planned.toml", "--step", 1, "--action",
                               'kv_set {"key": "base", "value": "120"}\nkv_get {"key": "base"}', "-o", out, "-q")
        assert code == 0, err
        written.append(out.read_bytes())
    assert written[0] == written[1]
    out = tmp_path / "plan.jsonl"
    with open_trace(out, background=False) as trace:
        assert trace.runs[1].record(1).plan.items == ["kv_set({'key': 'base', 'value': '120'})",
                                                      "kv_get({'key': 'base'})"]
        assert trace.runs[1].record(3).observation == "120"
    out = tmp_path / "calls.jsonl"
    code, _, err = run_cli(capsys, "fork", PLANS / "kv_parallel.toml", "--step", 1, "--observation", "17",
                           "--call", 2, "-o", out, "-q")
    assert code == 0, err
    with open_trace(out, background=False) as trace:
        assert trace.runs[1].info.fork["call"] == 2 and not trace.problems
        assert trace.runs[1].info.fork_text() == "fork of run 1 at step 1: call 2's observation edited"
        assert [c.observation for c in trace.runs[1].record(1).calls] == ["stored base", "17"]
    code, _, err = run_cli(capsys, "fork", PLANS / "kv_parallel.toml", "--step", 1, "--observation", "17",
                           "--call", 5, "-o", tmp_path / "x.jsonl", "-q")
    assert code == 2 and "there is no call 5" in err
    code, _, err = run_cli(capsys, "fork", PLANS / "kv_parallel.toml", "--step", 1, "--thought", "t",
                           "--call", 2, "-o", tmp_path / "x.jsonl", "-q")
    assert code == 2 and "--call K (1 or more) goes with --observation" in err
