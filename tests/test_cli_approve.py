"""--approve on record, show, check and stats: a plan with dangerous tools is refused
without it (saying why, nothing run or written); always runs each call, never denies it.
And the plan keys that declare them: dangerous, idempotency_key, the pretend and python kinds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentdbg.cli import main
from agentdbg.plans import PlanError, load_plan, parse_plan

PLAN = "dangerous_delete.toml"


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("command", ["show", "check", "stats"])
def test_without_approve_a_plan_with_dangerous_tools_is_refused_saying_why(command, sample_plans, capsys):
    code, out, err = run_cli(capsys, command, sample_plans / PLAN)
    assert code == 2 and out == ""
    assert flat(err) == (f"agentdbg {command}: error: {sample_plans / PLAN}: the plan's tool delete_file is "
                         "dangerous: each call waits for a decision, and nobody is here to make it; pass --approve "
                         "always (run every call) or --approve never (deny every call: the policy reads the denial), "
                         "or open the plan in the debugger to decide each call")


def test_record_without_approve_writes_nothing(sample_plans, tmp_path, capsys):
    trace = tmp_path / "run.jsonl"
    code, _, err = run_cli(capsys, "record", sample_plans / PLAN, "-o", trace)
    assert code == 2 and "--approve always" in err and "delete_file" in err
    assert not trace.exists()


def test_approve_always_runs_each_call(sample_plans, tmp_path, capsys):
    trace = tmp_path / "run.jsonl"
    code, out, err = run_cli(capsys, "record", sample_plans / PLAN, "-o", trace, "--approve", "always")
    assert code == 0, err
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()[1:]]
    approvals = [(e["step"], e["decision"], e["by"]) for e in events if e["type"] == "approval"]
    assert approvals == [(2, "approved", "--approve always"), (3, "approved", "--approve always")]
    code, out, _ = run_cli(capsys, "show", trace)
    assert "Approval     approved by --approve always" in out
    assert "Observation  deleted /var/log\n" in out


def test_approve_never_denies_each_call_and_the_policy_reads_why(sample_plans, capsys):
    code, out, _ = run_cli(capsys, "show", sample_plans / PLAN, "--approve", "never")
    assert code == 0
    assert flat(out).count("Observation ERROR: denied by --approve never: no call to a dangerous tool may run") == 2
    code, out, _ = run_cli(capsys, "check", sample_plans / PLAN, "--approve", "never", "--fail-on", "denied")
    assert code == 1
    assert "step 2 denied" in out and "step 3 denied" in out and "FAIL: denied (2 occurrences" in out
    code, out, _ = run_cli(capsys, "check", sample_plans / PLAN, "--approve", "always", "--fail-on", "denied,edited")
    assert code == 0, out
    code, out, _ = run_cli(capsys, "stats", sample_plans / PLAN, "--approve", "never", "--json")
    (stats,) = json.loads(out)["runs"]
    assert stats["approvals"] == {"denied": 2} and stats["errors"] == 2
    code, out, _ = run_cli(capsys, "stats", sample_plans / PLAN, "--approve", "never")
    assert "approvals    2 denied" in out


def test_approve_takes_only_always_or_never(sample_plans, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["show", str(sample_plans / PLAN), "--approve", "sometimes"])
    assert exited.value.code == 2 and "invalid choice: 'sometimes'" in capsys.readouterr().err


def test_a_plan_without_dangerous_tools_needs_no_approve(sample_plans, capsys):
    code, out, _ = run_cli(capsys, "show", sample_plans / "library_good.toml")
    assert code == 0 and "Approval" not in out


def test_a_trace_with_decisions_opens_without_approve_and_filters_find_them(sample_plans, tmp_path, capsys):
    from agentdbg.debugger.filters import parse_filter
    from agentdbg.trace.reader import open_trace

    trace = tmp_path / "run.jsonl"
    assert run_cli(capsys, "record", sample_plans / PLAN, "-o", trace, "--approve", "never")[0] == 0
    code, out, _ = run_cli(capsys, "show", trace, "--step", "3")
    assert code == 0 and "denied by --approve never" in out
    document = open_trace(trace)
    document.wait()
    (run,) = document.runs
    matched = {code: [n for n in range(1, run.step_count + 1) if parse_filter(code).matches(run.record(n))]
               for code in ("~approval", "~denied", "~edited", "~replayed", "~error & !~denied")}
    assert matched == {"~approval": [2, 3], "~denied": [2, 3], "~edited": [], "~replayed": [],
                       "~error & !~denied": []}
    document.close()


# -- the plan keys ---------------------------------------------------------------------------

def test_the_sample_plan_declares_its_dangerous_keyed_tool(sample_plans):
    plan = load_plan(sample_plans / PLAN)
    assert (plan.dangerous_tools, plan.keyed_tools) == (["delete_file"], ["delete_file"])
    tool = plan.build_agent().registry.get("delete_file")
    assert tool.spec()["dangerous"] is True and tool.spec()["idempotency_key"] == "path"


BASE = """task = "t"
[[tools]]
name = "pay"
kind = "pretend"
params = {{ order = "str", amount = "float" }}
reply = "paid {{order}}"
{extra}
[policy]
kind = "plan"
[[policy.steps]]
tool = "finish"
"""


@pytest.mark.parametrize(("extra", "message"), [
    ('idempotency_key = "invoice"', r"<plan>:7: \[\[tools\]\] #1 \(pay\): idempotency_key names \['invoice'\], which are not parameters"),
    ("idempotency_key = 3", r"<plan>:7: \[\[tools\]\] #1 \(pay\): 'idempotency_key' should be str or list, got int"),
    ("idempotency_key = [1]", r"<plan>:7: \[\[tools\]\] #1 \(pay\): idempotency_key should be a parameter name or a list"),
    ('dangerous = "yes"', r"<plan>:7: \[\[tools\]\] #1 \(pay\): 'dangerous' should be bool, got str"),
])
def test_bad_declarations_say_where(extra, message):
    with pytest.raises(PlanError, match=message):
        parse_plan(BASE.format(extra=extra))


def test_a_pretend_tool_fills_its_reply_and_refuses_unknown_placeholders():
    plan = parse_plan(BASE.format(extra='idempotency_key = ["order", "amount"]'))
    tool = plan.build_agent().registry.get("pay")
    assert tool.fn(order="A-{amount}", amount=3.0) == "paid A-{amount}"  # filled once, never re-read
    assert tool.calls == [{"order": "A-{amount}", "amount": 3.0}]
    # Text in braces that is not a parameter's name is kept as it is: never run as a format string.
    odd = parse_plan(BASE.format(extra="").replace("paid {order}", "paid {order.__class__} {0}"))
    assert odd.build_agent().registry.get("pay").fn(order="A", amount=1.0) == "paid {order.__class__} {0}"
    with pytest.raises(PlanError, match=r"<plan>:2: \[\[tools\]\] #1 \(pay\): pretend tool 'pay': the reply names \['who'\]"):
        parse_plan(BASE.format(extra="").replace("paid {order}", "paid {who}"))


def test_a_python_tool_must_be_declared_and_allowed(tmp_path):
    text = """task = "t"
{declared}
[[tools]]
name = "append_line"
kind = "python"
callable = "agentdbg.examples.ledger:append_line"
dangerous = true
[policy]
kind = "plan"
[[policy.steps]]
tool = "finish"
"""
    with pytest.raises(PlanError, match=r"<plan>:5: \[\[tools\]\] #1 \(append_line\): a python tool runs code; "
                                        "the plan must say executes_code = true"):
        parse_plan(text.format(declared=""))
    with pytest.raises(PlanError, match=r"<plan>:6: this plan runs Python code \(agentdbg.examples.ledger:append_line\); "
                                        "run it only if you trust it, with --allow-code"):
        parse_plan(text.format(declared="executes_code = true"))
    plan = parse_plan(text.format(declared="executes_code = true"), allow_code=True)
    tool = plan.build_agent().registry.get("append_line")
    assert tool.dangerous and tool.param_types == {"path": "str", "line": "str"}
    assert tool.description == "Append one line to a text file."
    missing = text.format(declared="executes_code = true").replace("ledger:append_line", "ledger:nothing")
    with pytest.raises(PlanError, match=r"<plan>:6: .*cannot load 'agentdbg.examples.ledger:nothing'"):
        parse_plan(missing, allow_code=True)


def test_the_append_sample_plan_needs_allow_code(sample_plans, capsys):
    code, _, err = run_cli(capsys, "show", sample_plans / "append_once.toml", "--approve", "always")
    assert code == 2 and "--allow-code" in err


def test_the_append_sample_plan_appends_once(sample_plans, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    trace = Path("ledger.jsonl")
    for _ in range(2):
        code, _, err = run_cli(capsys, "record", sample_plans / "append_once.toml", "-o", trace, "--append",
                               "--allow-code", "--approve", "always", "-q")
        assert code == 0, err
    assert (tmp_path / "ledger.txt").read_text(encoding="utf-8") == "A-17 paid 30.00 EUR\n"
