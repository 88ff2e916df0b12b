"""No side effect runs twice, and a trace never chooses the code a fork runs.

The attacks: a fork written elsewhere (``fork -o``) of a run appended after the run that
made a keyed call; a recorded decision handed to another call of its step; a trace whose
``run_start.source`` names a plan that is not the one recorded; a damaged ``operation``
line under ``record --append`` and ``fork``. Each counts the real side effects of the
tools in ``side_effect_tools`` (lines appended to a ledger in the test's directory)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentdbg.cli import main
from agentdbg.engine import OperationJournal
from agentdbg.engine import events as ev
from agentdbg.engine.approval import Decision
from agentdbg.plans import load_plan, plan_sha256
from agentdbg.trace.journal import read_journal
from agentdbg.trace.reader import open_trace
from agentdbg.trace.writer import write_trace

TESTS = Path(__file__).resolve().parent

PLAN = """\
task = "Record in the ledger that order A-17 was paid."
executes_code = true

[[tools]]
name = "append_line"
kind = "python"
callable = "side_effect_tools:append_line"
dangerous = {dangerous}
idempotency_key = ["path", "line"]

[policy]
kind = "outputs"
format = "json"
outputs = [
  '''{call}''',
  "Final Answer: recorded",
]
"""


def call(ledger: Path, line: str = "A-17 paid") -> str:
    return f"Action: append_line\nAction Input: {json.dumps({'path': ledger.as_posix(), 'line': line})}"


@pytest.fixture(autouse=True)
def side_effect_tools(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(TESTS))  # the plans' python tools
    monkeypatch.chdir(tmp_path)


def keyed_plan(tmp_path: Path, *, dangerous: bool = True, line: str = "A-17 paid",
               name: str = "plan.toml") -> tuple[Path, Path]:
    ledger = tmp_path / "ledger.txt"
    plan = tmp_path / name
    plan.write_text(PLAN.format(dangerous=str(dangerous).lower(), call=call(ledger, line)), encoding="utf-8")
    return plan, ledger


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def cli(capsys, *argv) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def record(capsys, plan: Path, trace: Path) -> None:
    code, err = cli(capsys, "record", plan, "-o", trace, "--append", "--allow-code", "--approve", "always", "-q")
    assert code == 0, err


def trace_lines(trace: Path) -> list[str]:
    return trace.read_text(encoding="utf-8", errors="surrogateescape").split("\n")


def damage(trace: Path, kind: str, how) -> None:
    """Rewrite the first line of event type ``kind`` with ``how`` (a function of the line)."""
    text = trace_lines(trace)
    index = next(i for i, line in enumerate(text) if line.startswith(f'{{"type":"{kind}",'))
    text[index] = how(text[index])
    trace.write_text("\n".join(text), encoding="utf-8", errors="surrogateescape")


def with_fields(**fields):
    """A change of a line's event: ``fields`` set (a value of None drops the field)."""
    def change(line: str) -> str:
        data = json.loads(line)
        for name, value in fields.items():
            if value is None:
                data.pop(name, None)
            else:
                data[name] = value
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return change


def steps(trace: Path, run: int) -> list:
    with open_trace(trace, background=False) as opened:
        found = opened.runs[run - 1]
        return [found.record(n) for n in range(1, found.step_count + 1)]


# -- one journal for every run of the file ---------------------------------------------------


def test_fork_o_of_a_later_run_does_not_repeat_an_earlier_run_s_operation(tmp_path, capsys):
    plan, ledger = keyed_plan(tmp_path)
    trace = tmp_path / "run.jsonl"
    record(capsys, plan, trace)
    record(capsys, plan, trace)  # answered from run 1: nothing appended
    assert lines(ledger) == ["A-17 paid"]
    out = tmp_path / "fork.jsonl"
    code, err = cli(capsys, "fork", trace, "--run", 2, "--step", 1, "--action", call(ledger), "-o", out,
                    "--allow-code", "--approve", "always", "-q")
    assert code == 0, err
    assert lines(ledger) == ["A-17 paid"]
    forked = steps(out, 2)[0]
    assert forked.replayed == {"run": 1, "step": 1} and forked.observation == f"appended to {ledger.as_posix()}: A-17 paid"


TWO_TOOLS = """\
task = "Settle the ledger."
executes_code = true

[[tools]]
name = "note"
kind = "python"
callable = "side_effect_tools:append_line"
dangerous = true

[[tools]]
name = "pay"
kind = "python"
callable = "side_effect_tools:append_line"
dangerous = true
idempotency_key = ["line"]

[policy]
kind = "script"

[[policy.steps]]
thought = "both at once"
actions = [
  {{ action = "note", args = {{ path = "{ledger}", line = "C noted" }} }},
  {{ action = "pay", args = {{ path = "{ledger}", line = "B paid" }} }},
]

[[policy.steps]]
kind = "finish"
content = "done"
"""


def mixed_decisions(tmp_path: Path) -> tuple[Path, Path]:
    """A trace whose step 1 made two dangerous calls: note (denied), then pay (approved)."""
    ledger = tmp_path / "ledger.txt"
    plan_path = tmp_path / "two.toml"
    plan_path.write_text(TWO_TOOLS.format(ledger=ledger.as_posix()), encoding="utf-8")
    plan = load_plan(plan_path, allow_code=True)

    def decide(request):
        return Decision.deny("not now", by="ops") if request.tool == "note" else Decision.approve(by="ops")

    trace = tmp_path / "run.jsonl"
    write_trace(trace, [plan.run(approver=decide).events])
    assert lines(ledger) == ["B paid"]
    return trace, ledger


def test_a_replayed_call_gets_only_the_decision_made_for_it(tmp_path, capsys):
    trace, ledger = mixed_decisions(tmp_path)
    approvals = [e for e in steps(trace, 1)[0].events if isinstance(e, ev.Approval)]
    assert [(a.tool, a.decision, a.id) for a in approvals] == [("note", "denied", "call_1_1"),
                                                                ("pay", "approved", "call_1_2")]
    code, err = cli(capsys, "fork", trace, "--step", 2, "--thought", "and now?", "-o", tmp_path / "fork.jsonl",
                    "--allow-code", "--approve", "never", "-q")
    assert code == 0, err
    assert lines(ledger) == ["B paid"]  # the note was denied then, and is denied again: it never ran
    replayed = [c.observation for c in steps(tmp_path / "fork.jsonl", 2)[0].calls]
    assert replayed == ["ERROR: denied by ops: not now", f"appended to {ledger.as_posix()}: B paid"]


def test_a_decision_is_not_given_to_a_call_with_other_arguments(tmp_path, capsys):
    plan, ledger = keyed_plan(tmp_path)
    trace = tmp_path / "run.jsonl"
    record(capsys, plan, trace)
    changed, _ = keyed_plan(tmp_path, line="A-18 paid", name="changed.toml")  # same task, another call
    code, err = cli(capsys, "fork", trace, "--step", 2, "--thought", "x", "-o", tmp_path / "fork.jsonl",
                    "--plan", changed, "--allow-code", "--approve", "never")
    assert code == 2 and "step 1 does not replay as recorded (arguments: recorded" in err
    assert lines(ledger) == ["A-17 paid"]  # the approval of A-17 did not run A-18: --approve never denied it


# -- a trace never chooses the code ----------------------------------------------------------


EVIL = """\
task = "Record in the ledger that order A-17 was paid."
executes_code = true

[[tools]]
name = "append_line"
kind = "python"
callable = "side_effect_tools:append_line"

[policy]
kind = "outputs"
format = "json"
outputs = ['''Action: append_line
Action Input: {{"path": "{marker}", "line": "the trace chose this code"}}''']
"""


def with_run_start(trace: Path, **fields) -> None:
    """The trace's run_start with ``fields`` changed (a value of None drops the field)."""
    damage(trace, "run_start", with_fields(**fields))


def evil_plan(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "chosen-by-the-trace.txt"
    evil = tmp_path / "evil.toml"
    evil.write_text(EVIL.format(marker=marker.as_posix()), encoding="utf-8")
    return evil, marker


@pytest.mark.parametrize("recorded_hash", ["absent", "another"])
def test_a_trace_naming_another_plan_runs_none_of_its_code(tmp_path, capsys, recorded_hash):
    plan, ledger = keyed_plan(tmp_path)
    trace = tmp_path / "run.jsonl"
    record(capsys, plan, trace)
    evil, marker = evil_plan(tmp_path)
    with_run_start(trace, source=str(evil), source_sha256=None if recorded_hash == "absent" else "0" * 64)
    for where in (["-o", tmp_path / "fork.jsonl"], ["--append"]):
        code, err = cli(capsys, "fork", trace, "--step", 2, "--thought", "x", *where, "--allow-code",
                        "--approve", "always")
        assert code == 2 and len(err.strip().splitlines()) == 1
        assert "a plan that runs Python code is re-run only as recorded or when named: --plan PLAN" in err
        assert not marker.exists()
    assert lines(ledger) == ["A-17 paid"]
    assert not (tmp_path / "fork.jsonl").exists()


def test_a_recorded_plan_changed_since_is_refused_and_one_named_with_plan_runs(tmp_path, capsys):
    plan, ledger = keyed_plan(tmp_path)
    trace = tmp_path / "run.jsonl"
    record(capsys, plan, trace)
    recorded = plan.read_bytes()
    with open_trace(trace, background=False) as opened:
        assert opened.runs[0].info.source_sha256 == plan_sha256(recorded)
    code, err = cli(capsys, "fork", trace, "--step", 2, "--thought", "x", "-o", tmp_path / "same.jsonl",
                    "--allow-code", "--approve", "always", "-q")
    assert code == 0, err  # the plan as recorded: its code runs
    plan.write_bytes(recorded + b"# edited since\n")
    code, err = cli(capsys, "fork", trace, "--step", 2, "--thought", "x", "-o", tmp_path / "changed.jsonl",
                    "--allow-code", "--approve", "always")
    assert code == 2 and "is not the one the run was recorded with (its SHA-256 differs" in err
    code, err = cli(capsys, "fork", trace, "--step", 2, "--thought", "x", "-o", tmp_path / "named.jsonl",
                    "--plan", plan, "--allow-code", "--approve", "always", "-q")
    assert code == 0, err
    with open_trace(tmp_path / "named.jsonl", background=False) as opened:
        assert opened.runs[1].info.source_sha256 == plan_sha256(plan.read_bytes())  # the plan that ran it
    assert lines(ledger) == ["A-17 paid"]


def test_a_trace_without_a_plan_hash_still_forks_a_plan_without_code(tmp_path, capsys):
    trace = tmp_path / "run.jsonl"
    code, err = cli(capsys, "record", TESTS.parent / "sample_plans" / "library_hallucinating.toml", "-o", trace, "-q")
    assert code == 0, err
    with_run_start(trace, source_sha256=None)  # as written before runs recorded it
    code, err = cli(capsys, "fork", trace, "--step", 2, "--observation", "7", "-o", tmp_path / "fork.jsonl", "-q")
    assert code == 0, err


# -- a damaged journal line ------------------------------------------------------------------


def _cut_after_key(line: str) -> str:
    end = line.index('"key":"') + len('"key":"')
    return line[:line.index('"', end) + 1]


DAMAGES = {
    "cut after the key": _cut_after_key,
    "cut inside the key": lambda line: line[:line.index('"key":"') + len('"key":"append_line:{"')],
    "garbage before it": lambda line: "\x00#" + line,
    "a byte that is not UTF-8": lambda line: line.replace('"tool":"append_line"', '"tool":"append_line\udcff"'),
    "written with spaces": lambda line: json.dumps(json.loads(line)),
    "an escaped key name": lambda line: line.replace('"key"', '"k\\u0065y"'),
    "another type first": lambda line: line.replace('{"type":"operation",', '{"type":"guards","type":"operation",'),
    "a UTF-8 BOM": lambda line: "\ufeff" + line,
    "a negative step": lambda line: line.replace('"step":1', '"step":-1'),
}


@pytest.mark.parametrize("how", DAMAGES, ids=lambda name: name.replace(" ", "-"))
def test_a_damaged_operation_line_never_lets_record_append_run_its_call_again(tmp_path, capsys, how):
    plan, ledger = keyed_plan(tmp_path, dangerous=False)  # no approval: the operation line is all there is...
    trace = tmp_path / "run.jsonl"
    record(capsys, plan, trace)
    damage(trace, "operation", DAMAGES[how])  # ...with the observation, whose key is intact
    record(capsys, plan, trace)
    assert lines(ledger) == ["A-17 paid"]
    again = steps(trace, 2)[0]
    assert again.observation_error or again.replayed == {"run": 1, "step": 1}, again.observation


def test_with_its_observation_damaged_too_the_line_that_names_the_key_is_said(tmp_path, capsys):
    plan, ledger = keyed_plan(tmp_path, dangerous=False)
    trace = tmp_path / "run.jsonl"
    record(capsys, plan, trace)
    damage(trace, "operation", lambda line: "\x00" + line)
    damage(trace, "observation", lambda line: line[:-3])
    record(capsys, plan, trace)
    assert lines(ledger) == ["A-17 paid"]
    refusal = steps(trace, 2)[0].observation
    assert refusal.startswith("ERROR: not run: line 5 of the trace is damaged and names this operation, so "
                              "whether the operation append_line:") and "ran is unknown" in refusal


def test_an_approval_that_names_the_key_stands_for_a_lost_operation_line(tmp_path, capsys):
    plan, ledger = keyed_plan(tmp_path)
    trace = tmp_path / "run.jsonl"
    record(capsys, plan, trace)
    damage(trace, "operation", lambda line: "")
    damage(trace, "observation", lambda line: "")
    record(capsys, plan, trace)
    assert lines(ledger) == ["A-17 paid"]
    assert "its call was approved at run 1, step 1 and the trace holds no operation line" in steps(trace, 2)[0].observation


@pytest.mark.parametrize("where", ["-o", "--append"])
def test_a_damaged_operation_line_never_lets_a_fork_run_its_call_again(tmp_path, capsys, where):
    plan, ledger = keyed_plan(tmp_path, dangerous=False)
    trace = tmp_path / "run.jsonl"
    record(capsys, plan, trace)
    damage(trace, "operation", lambda line: line[:-1])
    output = ["-o", tmp_path / "fork.jsonl"] if where == "-o" else ["--append"]
    code, err = cli(capsys, "fork", trace, "--step", 1, "--action", call(ledger), *output, "--allow-code", "-q")
    assert code == 0, err
    assert lines(ledger) == ["A-17 paid"]
    forked = steps(tmp_path / "fork.jsonl" if where == "-o" else trace, 2)[0]
    assert forked.observation.startswith("ERROR: not run: line 5 of the trace is damaged and names this operation")


# -- the journal itself ----------------------------------------------------------------------


def test_every_trace_of_a_key_counts_in_the_journal():
    key = 'pay:{"order":"A"}'
    journal = OperationJournal([
        ev.RunStart(step=0, task="t"),
        ev.Approval(step=1, tool="pay", decision="approved", key="pay:approved"),
        ev.Approval(step=1, tool="pay", decision="denied", key="pay:denied"),  # nothing ran
        ev.Observation(step=2, text="paid", key=key),  # its operation line is missing
        ev.Observation(step=3, text="paid before", key="pay:elsewhere", replayed={"run": 4, "step": 5}),
    ])
    assert journal.lookup("pay:denied") is None
    approved, lost, elsewhere = (journal.lookup(k) for k in ("pay:approved", key, "pay:elsewhere"))
    assert not approved.known and "approved at run 1, step 1" in approved.evidence
    assert not lost.known and "holds its result at run 1, step 2 but not the operation line" in lost.evidence
    assert (elsewhere.text, elsewhere.run, elsewhere.step) == ("paid before", 4, 5)  # a result stands
    journal.note(ev.Operation(step=2, key=key))
    journal.note(ev.Observation(step=2, text="paid", key=key))
    assert not journal.lookup(key).known  # what was found first stands: the effect stays unknown
    # An approval written just before its operation, in its step, is that operation's.
    journal.note(ev.Approval(step=6, tool="pay", decision="approved", key="pay:B"))
    journal.note(ev.Operation(step=6, key="pay:B"))
    journal.note(ev.Observation(step=6, text="paid B", key="pay:B"))
    assert journal.lookup("pay:B").text == "paid B"


def test_a_key_cut_short_on_a_damaged_line_marks_every_key_it_begins(tmp_path):
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b'{"type":"header","format":"agentdbg-trace","version":1}\n'
                     b'{"type":"run_start","step":0,"task":"t"}\n'
                     b'{"type":"operation","step":1,"key":"pay:{\\"order\\":\\"A\n'
                     b'{"type":"operation","step":2,"key":"pa\n')  # too little to say whose
    journal = read_journal(path)
    found = journal.lookup('pay:{"order":"A-17"}')
    assert found is not None and not found.known
    assert found.evidence.startswith('line 3 of the trace is damaged and names this operation, cut inside a key '
                                     'that begins "pay:{\\"order\\":\\"A"')
    assert journal.lookup('pay:{"order":"B"}') is None and journal.lookup("paint:x") is None


def test_a_line_too_long_to_decode_or_holding_too_many_keys_still_counts(tmp_path):
    from agentdbg.trace.source import MAX_LINE_BYTES

    header = b'{"type":"header","format":"agentdbg-trace","version":1}\n{"type":"run_start","step":0,"task":"t"}\n'
    long_line = tmp_path / "long.jsonl"  # valid JSON, but more than the readers decode
    long_line.write_bytes(header + b'{"type":"operation","step":1,"key":"pay:A","tool":"' + b"x" * MAX_LINE_BYTES + b'"}\n')
    found = read_journal(long_line).lookup("pay:A")
    assert found is not None and "line 3 of the trace is damaged" in found.evidence
    many = tmp_path / "many.jsonl"  # no event holds a thousand keys: this line may name any operation
    many.write_bytes(header + b'{"type":"operation","step":1,' + b'"key":"pay:x",' * 1001 + b"\n")
    found = read_journal(many).lookup("refund:B")
    assert found is not None and "holds more than 1,000 keys: it may name any operation" in found.evidence


def test_a_denial_written_before_decisions_named_their_key_still_denies_its_call(tmp_path, capsys):
    plan, ledger = keyed_plan(tmp_path)
    trace = tmp_path / "run.jsonl"
    code, err = cli(capsys, "record", plan, "-o", trace, "--allow-code", "--approve", "never", "-q")
    assert code == 0, err
    damage(trace, "approval", with_fields(key=None))  # as traces were written before
    code, err = cli(capsys, "fork", trace, "--step", 2, "--thought", "x", "-o", tmp_path / "fork.jsonl",
                    "--allow-code", "--approve", "always", "-q")
    assert code == 0, err
    assert lines(ledger) == []  # denied then, denied in the replay: --approve always did not run it
    assert steps(tmp_path / "fork.jsonl", 2)[0].observation == "ERROR: denied by --approve never: no call to a " \
                                                              "dangerous tool may run"
