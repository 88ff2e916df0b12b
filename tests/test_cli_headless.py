"""record, show, check and stats on sample plans and on the traces recorded from them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_cli_support import run_guarded

from agentdbg import importers
from agentdbg.cli import main
from agentdbg.engine import events as ev
from agentdbg.trace import format as fmt
from agentdbg.trace.reader import TraceRun
from agentdbg.trace.synthetic import synthetic_run
from agentdbg.trace.writer import TraceWriter


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(params=["plan", "trace"])
def source(request, tmp_path: Path, sample_plans: Path, capsys):
    """A sample plan by name: as the plan itself, or as the trace recorded from it."""

    def get(name: str) -> Path:
        plan = sample_plans / f"{name}.toml"
        if request.param == "plan":
            return plan
        trace = tmp_path / f"{name}.jsonl"
        code, _, err = run_cli(capsys, "record", plan, "-o", trace, "-q")
        assert code == 0, err
        return trace

    return get


def flat(text: str) -> str:
    """Output with line wrapping undone (human output wraps to the terminal's width)."""
    return " ".join(text.split())


def stats_of(capsys, path: Path, *extra: str) -> list[dict]:
    code, out, err = run_cli(capsys, "stats", path, "--json", *extra)
    assert code == 0, err
    return json.loads(out)["runs"]


# -- stats ------------------------------------------------------------------------------


def test_stats_of_the_good_library_policy(source, capsys) -> None:
    (run,) = stats_of(capsys, source("library_good"))
    assert (run["steps"], run["answer"], run["outcome"]) == (4, "2", "answered")
    assert run["tools"] == {"catalog": 1, "loans": 1, "calc": 1}
    assert (run["errors"], run["repeats"]) == (0, 0)


def test_stats_count_the_hallucinated_tool_as_an_error(source, capsys) -> None:
    (run,) = stats_of(capsys, source("library_hallucinating"))
    assert (run["steps"], run["answer"], run["outcome"]) == (5, "2", "answered")
    assert run["tools"]["web_search"] == 1 and run["tool_errors"] == {"web_search": 1}
    assert run["errors"] == 1 and run["tokens"] == {"total": 417, "budget": None}


def test_stats_of_the_stuck_policy(source, capsys) -> None:
    (run,) = stats_of(capsys, source("library_stuck"))
    assert (run["steps"], run["answer"], run["outcome"]) == (2, None, "action repeated")
    assert run["repeats"] == 1
    assert run["guard_trips"] == [{"step": 2, "guard": "repetition",
                                   "message": "action repeated again: catalog[Il Gattopardo]"}]


def test_stats_of_the_key_value_tax_script(source, capsys) -> None:
    (run,) = stats_of(capsys, source("kv_tax"))
    assert run["steps"] == 6 and sum(run["tools"].values()) == 5
    assert run["answer"] == "the total including 15% tax is 138.0"


def test_stats_of_a_run_over_its_step_budget(source, capsys) -> None:
    (run,) = stats_of(capsys, source("capital_over_budget"))
    assert (run["steps"], run["outcome"], run["answer"]) == (3, "budget exhausted", None)
    assert run["guard_trips"][0]["step"] == 3 and run["guard_trips"][0]["guard"] == "max_steps"


def test_stats_human_output_names_every_figure(source, capsys) -> None:
    code, out, _ = run_cli(capsys, "stats", source("library_hallucinating"))
    assert code == 0
    for text in ("library-hallucinating", "steps        5", "answered", "answer       2",
                 "web_search 1 (1 failed)", "errors       1", "tokens       417"):
        assert text in out


def test_stats_per_run_of_a_batch_file_and_run_selection(tmp_path: Path, sample_plans: Path, capsys) -> None:
    batch = tmp_path / "batch.jsonl"
    for name in ("library_good", "library_stuck", "kv_tax"):
        assert run_cli(capsys, "record", sample_plans / f"{name}.toml", "-o", batch, "--append", "-q")[0] == 0
    runs = stats_of(capsys, batch)
    assert [(r["run"], r["steps"], r["outcome"]) for r in runs] == [(1, 4, "answered"), (2, 2, "action repeated"), (3, 6, "answered")]
    assert [r["name"] for r in stats_of(capsys, batch, "--run", "2")] == ["library-stuck"]
    code, out, _ = run_cli(capsys, "stats", batch)
    # library_good declares its expected answer: the one graded run of the three
    assert "total  3 runs (2 answered, 1 action repeated); 1 correct, 0 wrong, 2 ungraded; 12 steps" in out
    code, _, err = run_cli(capsys, "stats", batch, "--run", "4")
    assert code == 2 and "has 3 runs" in err


def test_stats_from_checkpoints_equal_a_full_replay(tmp_path: Path, capsys) -> None:
    path = tmp_path / "long.jsonl"
    with TraceWriter(path, checkpoint_every=50) as writer:
        writer.write_all(synthetic_run(1234, seed=9))
    fast, full = stats_of(capsys, path), stats_of(capsys, path, "--full")
    assert fast == full
    assert fast[0]["steps"] == 1234 and fast[0]["errors"] > 0 and fast[0]["repeats"] > 0


# -- check ------------------------------------------------------------------------------


def test_check_passes_a_clean_run(source, capsys) -> None:
    code, out, _ = run_cli(capsys, "check", source("library_good"), "--fail-on", "error,repeat,budget")
    assert code == 0 and "ok: no error, repeat or budget in 1 run, 4 steps" in out


def test_check_names_the_step_that_repeated(source, capsys) -> None:
    code, out, _ = run_cli(capsys, "check", source("library_stuck"), "--fail-on", "repeat")
    assert code == 1
    assert "step 2 repeat" in out and "catalog[Il Gattopardo]" in flat(out) and "FAIL: repeat" in out


def test_check_only_fails_on_the_named_conditions(source, capsys) -> None:
    hallucinating = source("library_hallucinating")
    assert run_cli(capsys, "check", hallucinating, "--fail-on", "repeat,budget")[0] == 0
    code, out, _ = run_cli(capsys, "check", hallucinating, "--fail-on", "error")
    assert code == 1 and "step 1 error" in out and "unknown_tool" in out
    code, out, _ = run_cli(capsys, "check", source("capital_over_budget"), "--fail-on", "budget", "--json")
    result = json.loads(out)
    assert code == 1 and result["failed"] == ["budget"]
    assert result["runs"][0]["failures"] == [{"condition": "budget", "step": 3,
                                              "message": "max_steps guard: step budget exhausted: 3 steps used"}]


def test_check_run_level_conditions(source, capsys) -> None:
    assert run_cli(capsys, "check", source("library_good"), "--fail-on", "final-missing,incomplete")[0] == 0
    code, out, _ = run_cli(capsys, "check", source("capital_over_budget"), "--fail-on", "final-missing")
    assert code == 1 and "no final answer (outcome: budget exhausted)" in out


def test_check_parse_errors(source, capsys) -> None:
    code, out, _ = run_cli(capsys, "check", source("population"), "--fail-on", "parse")
    assert code == 1 and "step 1 parse" in out


def test_check_default_conditions(source, capsys) -> None:
    assert run_cli(capsys, "check", source("library_good"))[0] == 0
    assert run_cli(capsys, "check", source("library_stuck"))[0] == 1


def test_check_counts_every_occurrence_and_lists_a_few(tmp_path: Path, capsys) -> None:
    path = tmp_path / "long.jsonl"
    with TraceWriter(path) as writer:
        writer.write_all(synthetic_run(2000, seed=1))
    code, out, _ = run_cli(capsys, "check", path, "--fail-on", "error", "--json", "--max-report", "3")
    result = json.loads(out)
    expected = stats_of(capsys, path)[0]["errors"]
    assert code == 1 and result["runs"][0]["counts"] == {"error": expected}
    assert len(result["runs"][0]["failures"]) == 3
    code, out, _ = run_cli(capsys, "check", path, "--fail-on", "error", "--max-report", "3")
    assert f"... and {expected - 3:,} more" in out


@pytest.mark.parametrize("fail_on", ["bogus", "error,nope", ",", ""])
def test_check_rejects_unknown_conditions_with_exit_2(sample_plans: Path, capsys, fail_on: str) -> None:
    code, out, err = run_cli(capsys, "check", sample_plans / "library_good.toml", "--fail-on", fail_on)
    assert code == 2 and out == ""
    assert "valid conditions: error, parse, repeat, budget" in err


def test_check_a_damaged_trace(tmp_path: Path, sample_plans: Path, capsys) -> None:
    path = tmp_path / "damaged.jsonl"
    run_cli(capsys, "record", sample_plans / "library_good.toml", "-o", path, "-q")
    data = path.read_bytes()
    path.write_bytes(data.replace(b'{"type":"thought","step":2,', b'{"type":"thought","step":2,,'))
    line = data[: data.index(b'{"type":"thought","step":2,')].count(b"\n") + 1
    code, _, err = run_cli(capsys, "check", path, "--fail-on", "error")
    assert code == 0 and f"{path}:{line}: not valid JSON" in err
    code, out, _ = run_cli(capsys, "check", path, "--fail-on", "error,damaged")
    assert code == 1 and "FAIL: damaged" in out


def test_check_a_cut_off_recording(tmp_path: Path, sample_plans: Path, capsys) -> None:
    path = tmp_path / "cut.jsonl"
    run_cli(capsys, "record", sample_plans / "library_good.toml", "-o", path, "-q")
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b'{"type":"step","step":3}')])
    assert run_cli(capsys, "check", path, "--fail-on", "error,repeat,budget")[0] == 0
    code, out, _ = run_cli(capsys, "check", path, "--fail-on", "incomplete")
    assert code == 1 and "the run has no end after 2 steps" in out
    (run,) = stats_of(capsys, path)
    assert (run["steps"], run["outcome"], run["complete"]) == (2, "incomplete", False)


# -- show -------------------------------------------------------------------------------


def test_show_prints_the_transcript_step_by_step(source, capsys) -> None:
    code, out, _ = run_cli(capsys, "show", source("library_hallucinating"))
    assert code == 0
    lines = out.splitlines()
    assert any(line.startswith("run 1") and "library-hallucinating" in line for line in lines)
    assert "   1 Thought      I search online." in lines
    assert "     Action       web_search[Il Gattopardo copies]" in lines
    assert "   5 Thought      I have the number." in lines
    assert "     Final Answer 2" in lines
    assert any("step 1/6 · repeats 1/2 · errors 1 · tokens 32 (+32)" in line and "error" in line for line in lines)
    assert lines[-1] == "outcome  answered, correct after 5 steps: 2"  # the plan's expected answer is 2
    assert all(line == line.rstrip() for line in lines)  # no padding in logs and files


def test_show_a_kv_script_like_its_pretty_trace(source, capsys) -> None:
    code, out, _ = run_cli(capsys, "show", source("kv_tax"))
    assert code == 0
    for thought, action, observation in [
        ("store the base price", "kv_set({'key': 'base', 'value': '120'})", "stored base"),
        ("compute 15% tax", "calculator({'expr': '120 * 0.15'})", "18.0"),
        ("confirm stored values", "kv_get({'key': 'base'})", "120"),
    ]:
        assert f"Thought      {thought}" in out and f"Action       {action}" in out
        assert f"Observation  {observation}" in out
    assert "outcome  answered after 6 steps: the total including 15% tax is 138.0" in out


def test_show_one_step_with_its_derived_state(source, capsys) -> None:
    code, out, _ = run_cli(capsys, "show", source("library_stuck"), "--step", "2")
    assert code == 0
    assert "   2 Thought      I need the total copies." in out
    assert "Guard        action repeated again" in out
    assert "state after this step" in out and "tool calls       catalog 1" in out
    assert "repeated steps   1" in out and "guard trips      step 2: repetition" in out
    assert "memory tiers" in out
    assert "   1 Thought" not in out


def test_show_step_as_json(source, capsys) -> None:
    code, out, _ = run_cli(capsys, "show", source("library_hallucinating"), "--step", "1", "--json")
    data = json.loads(out)
    assert code == 0 and data["step"] == 1 and data["steps"] == 5
    assert data["record"]["tool"] == "web_search" and data["record"]["error_kind"] == "unknown_tool"
    assert data["record"]["marker"] == "error"
    assert data["state"]["tool_calls"] == {"web_search": [1, 1]} and data["state"]["error_count"] == 1


def test_show_as_json_one_run_per_line(source, capsys) -> None:
    code, out, _ = run_cli(capsys, "show", source("library_good"), "--json")
    (run,) = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert run["run"] == 1 and run["name"] == "library-good" and run["tools"] == ["calc", "catalog", "loans"]
    assert [step["step"] for step in run["steps"]] == [1, 2, 3, 4]
    assert run["steps"][0]["call"] == "catalog[Il Gattopardo]" and run["steps"][3]["answer"] == "2"
    assert (run["step_count"], run["outcome"], run["answer"]) == (4, "answered", "2")


def test_show_as_json_for_several_runs(tmp_path: Path, sample_plans: Path, capsys) -> None:
    batch = tmp_path / "batch.jsonl"
    for name in ("library_good", "library_stuck"):
        run_cli(capsys, "record", sample_plans / f"{name}.toml", "-o", batch, "--append", "-q")
    code, out, _ = run_cli(capsys, "show", batch, "--json")
    runs = [json.loads(line) for line in out.splitlines()]
    assert [(r["run"], len(r["steps"]), r["outcome"]) for r in runs] == [(1, 4, "answered"), (2, 2, "action repeated")]


def test_show_a_range_of_steps(source, capsys) -> None:
    code, out, _ = run_cli(capsys, "show", source("kv_tax"), "--from", "2", "--to", "3", "--json")
    assert [step["step"] for step in json.loads(out)["steps"]] == [2, 3]


def test_show_step_out_of_range_exits_2(source, capsys) -> None:
    code, out, err = run_cli(capsys, "show", source("library_good"), "--step", "9")
    assert code == 2 and "has 4 steps" in err and out == ""


def test_show_streams_a_big_trace_without_loading_it(tmp_path: Path, capsys, monkeypatch) -> None:
    path = tmp_path / "big.jsonl"
    with TraceWriter(path) as writer:
        writer.write_all(synthetic_run(3000, seed=2))

    def refuse(self):
        raise AssertionError("show must not load every event")

    monkeypatch.setattr(TraceRun, "events", refuse)
    monkeypatch.setattr(TraceRun, "iter_events", refuse)
    code, out, _ = run_cli(capsys, "show", path, "--json")
    assert code == 0 and len(json.loads(out)["steps"]) == 3000
    code, out, _ = run_cli(capsys, "show", path, "--step", "2999", "--json")
    assert code == 0 and json.loads(out)["state"]["step"] == 2999


def test_show_never_passes_markup_or_control_sequences_through(tmp_path: Path, capsys) -> None:
    hostile = "[bold red]not markup[/] \x1b[2J\x1b]52;c;ZXZpbA==\x07 \x1b]8;;http://x\x07link\x1b]8;;\x07 :smile:"
    events = [ev.RunStart(step=0, task=hostile, name=hostile), ev.StepStart(step=1),
              ev.Thought(step=1, text=hostile), ev.ActionTaken(step=1, tool="t", args=hostile, call=hostile),
              ev.Observation(step=1, text=hostile), ev.Answered(step=1, answer=hostile),
              ev.RunEnd(step=1, outcome="answered", answer=hostile, steps=1)]
    path = tmp_path / "hostile.jsonl"
    with TraceWriter(path) as writer:
        writer.write_all(events)
    for command in (["show", path], ["show", path, "--step", "1"], ["stats", path], ["check", path, "--fail-on", "final-missing"]):
        code, out, _ = run_cli(capsys, *command)
        assert code == 0
        assert "\x1b" not in out and "\x07" not in out
        assert "[bold red]not markup[/]" in out.replace("\n", "") or command[0] in ("check",)
        assert ":smile:" in out or command[0] == "check"


# -- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["show", "check", "stats"])
def test_unusable_input_exits_2_with_a_clear_message(tmp_path: Path, capsys, command: str) -> None:
    code, out, err = run_cli(capsys, command, tmp_path / "missing.jsonl")
    assert code == 2 and out == "" and "missing.jsonl: no such file" in err
    code, _, err = run_cli(capsys, command, tmp_path)
    assert code == 2 and "is a directory" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert run_cli(capsys, command, empty)[0] == 2
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(bytes(range(256)) * 10)
    code, _, err = run_cli(capsys, command, binary)
    assert code == 2 and str(binary) in err


FORMATS = ["plan", "trace", *importers.BY_NAME]


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"),
                    reason="needs named pipes and /dev/zero")
def test_pipes_and_devices_are_refused_by_every_command_and_format_without_reading(tmp_path: Path) -> None:
    out = tmp_path / "out" / "converted.jsonl"
    inputs = {}
    for name in ("run.jsonl", "plan.toml", "notes.txt"):
        os.mkfifo(tmp_path / f"fifo-{name}")
        (tmp_path / f"zero-{name}").symlink_to("/dev/zero")
        inputs[tmp_path / f"fifo-{name}"] = "is a named pipe (FIFO)"
        inputs[tmp_path / f"zero-{name}"] = "is a character device"
    commands = []
    for path in inputs:
        commands += [["show", path], ["stats", path], ["check", path], ["convert", path, "-o", out], [path],
                     ["record", path, "-o", out]]
        for name in FORMATS:
            commands += [["show", path, "--format", name], [path, "--format", name]]
            if name in importers.BY_NAME:
                commands.append(["convert", path, "--format", name, "-o", out])
    for argv, (code, stdout, err) in zip(commands, run_guarded(*commands), strict=True):
        path = next(arg for arg in argv if isinstance(arg, Path))
        assert code == 2 and f"{path}: {inputs[path]}, not a regular file" in err, (argv, err)
        assert len(err.splitlines()) == 1 and stdout == "", (argv, err)
    assert not out.parent.exists()


def test_symlinks_to_regular_files_open_normally(tmp_path: Path, sample_plans: Path, capsys) -> None:
    trace = tmp_path / "run.jsonl"
    assert run_cli(capsys, "record", sample_plans / "library_good.toml", "-o", trace, "-q")[0] == 0
    for target, name in ((trace, "link.jsonl"), (sample_plans / "library_good.toml", "link.toml")):
        link = tmp_path / name
        link.symlink_to(target)
        assert stats_of(capsys, link)[0]["answer"] == "2"


def test_a_plan_larger_than_a_plan_can_be_is_refused_with_its_size(tmp_path: Path, sample_plans: Path,
                                                                   capsys) -> None:
    big = tmp_path / "big.toml"
    padding = "# " + "x" * 1000 + "\n"
    big.write_text((sample_plans / "library_good.toml").read_text() + padding * 5200)
    for argv in (["show", big], ["stats", big, "--format", "plan"], ["record", big, "-o", tmp_path / "o.jsonl"]):
        code, _, err = run_cli(capsys, *argv)
        assert code == 2 and f"{big}: is 5.0 MiB; plans are at most 4.0 MiB" in err, argv


def test_an_imported_file_over_the_import_limit_is_refused_with_its_size(tmp_path: Path, capsys,
                                                                         monkeypatch) -> None:
    from agentdbg.importers import base

    monkeypatch.setattr(base, "MAX_IMPORT_BYTES", 4096)  # the limit is one named constant
    path = tmp_path / "run.log"
    path.write_text("Question: q\n" + "Thought 1: think\nAction 1: Search[x]\nObservation 1: y\n" * 100)
    for argv in (["show", path], ["check", path, "--format", "react-paper"], ["convert", path, "-o", tmp_path / "o.jsonl"]):
        code, _, err = run_cli(capsys, *argv)
        assert code == 2 and f"{path}: is 5.3 KiB; runs saved by other agent stacks are read whole, at most 4.0 KiB" in err


def test_a_binary_file_is_refused_in_one_line_whatever_the_format(tmp_path: Path, capsys) -> None:
    blob = tmp_path / "blob.json"
    blob.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)
    text_formats = [name for name in FORMATS if not getattr(importers.BY_NAME.get(name), "BINARY", False)]
    commands = [["show", blob], ["stats", blob], ["check", blob], ["convert", blob, "-o", tmp_path / "o.jsonl"]]
    commands += [["show", blob, "--format", name] for name in text_formats]
    commands += [["convert", blob, "--format", name, "-o", tmp_path / "o.jsonl"] for name in text_formats
                 if name in importers.BY_NAME]
    for argv in commands:
        code, _, err = run_cli(capsys, *argv)
        assert code == 2 and err.endswith(f"{blob}: is a binary file (not text)\n"), (argv, err)
        assert len(err.splitlines()) == 1, (argv, err)
    # A binary format asked for by name reads the bytes itself and says why it cannot.
    binary = [name for name in importers.BY_NAME if getattr(importers.BY_NAME[name], "BINARY", False)]
    for name in binary:
        code, _, err = run_cli(capsys, "show", blob, "--format", name)
        assert code == 2 and str(blob) in err and "is a binary file" not in err, (name, err)


def test_a_binary_format_is_not_refused_as_binary(tmp_path: Path, capsys) -> None:
    archive = Path(__file__).parent / "fixtures" / "import" / "inspect-ai" / "crashed.eval"
    disguised = tmp_path / "log.bin"  # detection by content, whatever the name
    disguised.write_bytes(archive.read_bytes())
    for path in (archive, disguised):
        code, out, err = run_cli(capsys, "stats", path, "--json")
        assert code == 0 and json.loads(out)["kind"] == "inspect-ai", err
        code, out, err = run_cli(capsys, "convert", path, "-o", tmp_path / "eval.jsonl", "--force")
        assert code == 0 and "(inspect-ai) ->" in out, err


def test_a_utf16_file_is_named_as_such_with_how_to_convert_it(tmp_path: Path, capsys) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-16")  # as PowerShell writes
    for argv in (["show", chat], ["stats", chat, "--format", "openai-chat"], ["convert", chat, "-o", tmp_path / "o.jsonl"]):
        code, _, err = run_cli(capsys, *argv)
        assert code == 2 and err.endswith(
            f"{chat}: is UTF-16 text; agentdbg reads UTF-8 (iconv -f UTF-16 -t UTF-8 converts it)\n"), err


def test_a_plan_that_runs_code_needs_allow_code(sample_plans: Path, capsys) -> None:
    plan = sample_plans / "library_good_python.toml"
    code, _, err = run_cli(capsys, "stats", plan)
    assert code == 2 and "--allow-code" in err
    assert stats_of(capsys, plan, "--allow-code")[0]["answer"] == "2"


def test_argument_errors_exit_2(sample_plans: Path, capsys) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["show", str(sample_plans / "library_good.toml"), "--step", "two"])
    assert raised.value.code == 2
    code, _, err = run_cli(capsys, "show", sample_plans / "library_good.toml", "--run", "0")
    assert code == 2 and "numbered from 1" in err


# -- record ------------------------------------------------------------------------------


def test_record_writes_a_trace_that_reads_back(tmp_path: Path, sample_plans: Path, capsys) -> None:
    path = tmp_path / "run.jsonl"
    code, out, _ = run_cli(capsys, "record", sample_plans / "library_hallucinating.toml", "-o", path)
    assert code == 0
    assert out.startswith(f"library-hallucinating: 5 steps, answered: 2 -> {path} (27 events)")
    lines = path.read_bytes().split(b"\n")
    assert lines[0].startswith(fmt.HEADER_PREFIX) and json.loads(lines[0])["source"].endswith("library_hallucinating.toml")
    assert stats_of(capsys, path)[0]["steps"] == 5


def test_record_refuses_to_overwrite_without_force(tmp_path: Path, sample_plans: Path, capsys) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("precious\n")
    code, _, err = run_cli(capsys, "record", sample_plans / "library_good.toml", "-o", path)
    assert code == 2 and "--force" in err and path.read_text() == "precious\n"
    assert run_cli(capsys, "record", sample_plans / "library_good.toml", "-o", path, "--force", "-q")[0] == 0
    assert stats_of(capsys, path)[0]["steps"] == 4


def test_record_appends_runs(tmp_path: Path, sample_plans: Path, capsys) -> None:
    path = tmp_path / "batch.jsonl"
    for name in ("library_good", "library_hallucinating"):
        assert run_cli(capsys, "record", sample_plans / f"{name}.toml", "-o", path, "--append", "-q")[0] == 0
    assert [r["steps"] for r in stats_of(capsys, path)] == [4, 5]


def test_record_with_fsync(tmp_path: Path, sample_plans: Path, capsys) -> None:
    path = tmp_path / "synced.jsonl"
    assert run_cli(capsys, "record", sample_plans / "kv_tax.toml", "-o", path, "--fsync", "-q")[0] == 0
    assert stats_of(capsys, path)[0]["answer"] == "the total including 15% tax is 138.0"


@pytest.mark.parametrize("args, message", [
    (["missing.toml"], "no such file"),
    (["notes.txt"], "not a plan"),
    (["bad.toml"], "bad.toml:"),
    (["library_good_python"], "--allow-code"),
])
def test_record_rejects_what_is_not_a_runnable_plan(tmp_path: Path, sample_plans: Path, capsys, args, message) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "bad.toml").write_text('task = "t"\n[policy]\nkind = "nonsense"\n')
    target = sample_plans / "library_good_python.toml" if args == ["library_good_python"] else tmp_path / args[0]
    code, _, err = run_cli(capsys, "record", target, "-o", tmp_path / "out.jsonl")
    assert code == 2 and message in err and not (tmp_path / "out.jsonl").exists()


def test_show_into_a_pipe_that_closes_early_exits_quietly(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "big.jsonl"
    with TraceWriter(path) as writer:
        writer.write_all(synthetic_run(20_000, seed=5))
    process = subprocess.Popen([sys.executable, "-m", "agentdbg", "show", str(path)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = process.stdout.readline()
    process.stdout.close()  # like `| head -1`
    code = process.wait(60)
    err = process.stderr.read().decode()
    process.stderr.close()
    assert first == b"\n" and code == 0 and err == ""


@pytest.mark.parametrize("command", ["show", "stats", "check"])
@pytest.mark.parametrize("json_output", [False, True])
def test_a_file_with_no_runs_is_unusable_input_for_every_command(tmp_path: Path, capsys, command: str,
                                                                 json_output: bool) -> None:
    header_only = tmp_path / "header_only.jsonl"
    header_only.write_text(fmt.header_line())
    damaged = tmp_path / "damaged.jsonl"  # a header, then nothing readable
    damaged.write_text(fmt.header_line() + '{"type":"thought","step":1,\nnot json\n')
    extra = ["--json"] if json_output else []
    for path in (header_only, damaged):
        code, out, err = run_cli(capsys, command, path, *extra)
        assert code == 2 and out == "", (path, out)
        assert err.splitlines()[0] == f"agentdbg {command}: error: {path}: no runs in it"
    code, _, err = run_cli(capsys, command, damaged, *extra)
    assert f"agentdbg {command}: warning: {damaged}:2:" in err  # why there is nothing: the damage


@pytest.mark.parametrize("name", [5, "agentdbg-trace\u0000x"])
def test_a_damaged_header_format_is_a_problem_not_a_refusal(tmp_path: Path, sample_plans: Path, capsys,
                                                             name) -> None:
    path = tmp_path / "run.jsonl"
    assert run_cli(capsys, "record", sample_plans / "library_stuck.toml", "-o", path, "-q")[0] == 0
    lines = path.read_text().splitlines(keepends=True)
    lines[0] = json.dumps({**json.loads(lines[0]), "format": name}) + "\n"
    path.write_text("".join(lines))
    for command, expected in (("show", 0), ("stats", 0), ("check", 1)):
        code, out, err = run_cli(capsys, command, path)
        assert code == expected and ("catalog[Il Gattopardo]" in flat(out) or command == "stats"), (command, err)
        assert f"agentdbg {command}: warning: {path}:1: header names format" in err
        assert "\x00" not in err
    assert stats_of(capsys, path)[0]["steps"] == 2


@pytest.mark.parametrize("tools", [None, False, 3.5, [{"name": 5}, "calc"]])
def test_malformed_run_start_tools_are_read_as_no_tools_by_every_command(tmp_path: Path, sample_plans: Path,
                                                                        capsys, tools) -> None:
    path = tmp_path / "run.jsonl"
    assert run_cli(capsys, "record", sample_plans / "library_stuck.toml", "-o", path, "-q")[0] == 0
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = json.dumps({**json.loads(lines[1]), "tools": tools}, separators=(",", ":")) + "\n"
    path.write_text("".join(lines))
    for argv, expected in ((["show"], 0), (["stats"], 0), (["check"], 1), (["show", "--step", "2"], 0)):
        code, out, err = run_cli(capsys, *argv, path)
        assert code == expected, (argv, err)
        assert f"warning: {path}:2: run_start: 'tools'" in err and "Traceback" not in err
    code, out, _ = run_cli(capsys, "show", path, "--json")
    run = json.loads(out)
    assert run["tools"] == [] and run["task"] == "How many copies of Il Gattopardo are available?"
    assert stats_of(capsys, path)[0]["tools"] == {"catalog": 1}  # the repeated call was blocked, not made


def test_the_repetition_brake_is_a_repeat_not_a_budget(capsys, source):
    stuck = source("library_stuck")
    assert run_cli(capsys, "check", stuck, "--fail-on", "budget")[0] == 0
    code, out, _ = run_cli(capsys, "check", stuck, "--fail-on", "repeat")
    assert code == 1 and "step 2" in out
    code, out, _ = run_cli(capsys, "check", stuck, "--fail-on", "guard")
    assert code == 1 and "repetition guard" in out


@pytest.mark.parametrize("plan", ["capital_over_budget", "bad_arguments", "token_budget_small"])
def test_each_budget_running_out_fails_the_budget_check(capsys, source, plan):
    assert run_cli(capsys, "check", source(plan), "--fail-on", "budget")[0] == 1


def test_show_step_prompt_prints_what_the_policy_was_given(capsys, source):
    path = source("memory_research")
    code, out, _ = run_cli(capsys, "show", path, "--step", "14", "--prompt", "--json")
    assert code == 0
    prompt = json.loads(out)["prompt"]
    assert "Recalled from memory:\n- Thought: Start with the oldest candidate" in prompt
    code, out, _ = run_cli(capsys, "show", path, "--step", "14", "--prompt")
    assert code == 0 and "prompt at step 14, as the policy saw it:" in out and "Recalled from memory:" in out
    assert run_cli(capsys, "show", path, "--prompt")[0] == 2


def test_convert_keeps_control_sequences_in_file_names_off_the_terminal(tmp_path: Path, capsys) -> None:
    hostile = tmp_path / "chat\x1b]52;c;aGk=\x07\x1b[2J.json"
    hostile.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "x", "content": "y"}]}),
                       encoding="utf-8")
    code, out, err = run_cli(capsys, "convert", hostile, "-o", tmp_path / "chat.jsonl")
    assert code == 0 and "1 run, 0 steps" in out
    assert "agentdbg convert: warning:" in err and "not a chat role" in err
    assert "\x1b" not in out + err and "\x07" not in out + err
    code, _, err = run_cli(capsys, "convert", hostile, "-o", tmp_path / "chat.jsonl")
    assert code == 2 and "exists; use --force" in err and "\x1b" not in err


def test_error_messages_of_several_lines_stay_readable(tmp_path: Path, capsys) -> None:
    unknown = tmp_path / "unknown.json"
    unknown.write_text('{"hello": "world"}', encoding="utf-8")
    for command in ("show", "convert"):
        argv = [command, unknown] + (["-o", tmp_path / "out.jsonl"] if command == "convert" else [])
        code, _, err = run_cli(capsys, *argv)
        assert code == 2 and f"agentdbg {command}: error:" in err
        assert f"Formats tried:\n  {importers.FORMATS[0].NAME}:" in err and "⏎" not in err
