"""Plans are data: loading one names file and line for every mistake, and runs no code."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest
from test_cli_support import finishes

from agentdbg.plans import PlanError, load_plan, looks_like_plan, parse_plan

MINIMAL = """\
task = "What is 6 * 7?"

[[tools]]
name = "calc"
kind = "calculator"

[policy]
kind = "outputs"
outputs = ["Action: calc[6 * 7]", "Final Answer: 42"]
"""


def write(tmp_path, text, name="plan.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def error_of(tmp_path, text, **kwargs) -> str:
    with pytest.raises(PlanError) as raised:
        load_plan(write(tmp_path, text), **kwargs)
    return str(raised.value)


def test_a_minimal_plan_runs(tmp_path):
    plan = load_plan(write(tmp_path, MINIMAL))
    assert plan.name == "plan"
    trace = plan.run()
    assert (trace.answer, trace.outcome.steps) == ("42", 2)


def test_each_run_gets_fresh_tools(sample_plans):
    plan = load_plan(sample_plans / "kv_tax.toml")
    assert plan.run().events[-1].to_dict() == plan.run().events[-1].to_dict()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("task = \n", "plan.toml: not valid TOML: "),
        ('name = "x"\n[policy]\nkind = "outputs"\noutputs = []\n', "plan.toml: plan: missing 'task'"),
        ('task = "t"\n', "plan.toml: plan: missing 'policy'"),
        ('task = "t"\ncolour = "red"\n[policy]\nkind="outputs"\noutputs=[]\n', "plan.toml:2: unknown key 'colour'"),
        ('task = "t"\n[policy]\nkind = "llm"\n', "plan.toml:3: [policy]: unknown kind 'llm'; use one of outputs, plan, script"),
        ('task = "t"\n[policy]\nkind = "outputs"\nformat = "xml"\noutputs = []\n', "plan.toml:4: [policy]: format must be bracket, colon, json or numbered"),
        ('task = "t"\n[policy]\nkind = "outputs"\noutputs = [1]\n', "plan.toml:4: [policy]: output #1 should be text"),
        ('task = "t"\n[policy]\nkind = "outputs"\nthen = "loop"\noutputs = []\n', "[policy]: 'then' must be 'stop' or 'repeat'"),
        ('task = "t"\n[guards]\nmax_steps = "ten"\n[policy]\nkind="outputs"\noutputs=[]\n', "plan.toml:3: guards: 'max_steps' should be int, got str"),
        ('task = "t"\n[guards]\nmax_steps = -1\n[policy]\nkind="outputs"\noutputs=[]\n', "[guards]: max_steps must be 0 or more, got -1"),
        ('task = "t"\n[guards]\nrepeat = "twice"\n[policy]\nkind="outputs"\noutputs=[]\n', "plan.toml:3: [guards]: repeat must be off, any or consecutive"),
        ('task = "t"\n[guards]\nspeed = 1\n[policy]\nkind="outputs"\noutputs=[]\n', "plan.toml:3: [guards]: unknown key 'speed'"),
        ('task = "t"\n[policy]\nkind="outputs"\noutputs=[]\n[[tools]]\nname = "a"\nkind = "calculator"\n[[tools]]\nname = "b"\nkind = "tabel"\n',
         "plan.toml:10: [[tools]] #2 (b): unknown kind 'tabel'"),
        ('task = "t"\n[policy]\nkind="outputs"\noutputs=[]\n[[tools]]\nname = "a"\nkind = "table"\n',
         "plan.toml:5: [[tools]] #1 (a): missing 'rows'"),
        ('task = "t"\n[policy]\nkind="outputs"\noutputs=[]\n[[tools]]\nname = "a"\nkind = "calculator"\n[[tools]]\nname = "a"\nkind = "calculator"\n',
         "plan.toml:9: [[tools]] #2 (a): a second tool named 'a'"),
        ('task = "t"\n[policy]\nkind="outputs"\noutputs=[]\n[[tools]]\nname = "s"\nkind = "scripted"\nresponses = [{ wait = 1 }]\n',
         "[[tools]] #1 (s): scripted tool 's', response 1: use one of return / raise / hang"),
        ('task = "t"\n[policy]\nkind="outputs"\noutputs=[]\n[[tools]]\nname = "s"\nkind = "scripted"\nresponses = [1]\n',
         "plan.toml:5: [[tools]] #1 (s): scripted tool 's', response 1: use one of return / raise / hang"),
        ('task = "t"\n[policy]\nkind = "plan"\n[[policy.steps]]\nargs = {}\n', "plan.toml:4: [[policy.steps]] #1: missing 'tool'"),
        ('task = "t"\n[guards]\ntool_timeout = inf\n[policy]\nkind="outputs"\noutputs=[]\n',
         "plan.toml:3: [guards]: tool_timeout must be a positive number of seconds, got inf"),
        ('task = "t"\n[guards]\ntool_timeout = nan\n[policy]\nkind="outputs"\noutputs=[]\n',
         "plan.toml:3: [guards]: tool_timeout must be a positive number of seconds, got nan"),
        ('task = "t"\n[policy]\nkind="outputs"\noutputs=[]\n[[tools]]\nname = "a"\nkind = "calculator"\ntimeout = 0\n',
         "plan.toml:8: [[tools]] #1 (a): timeout must be a positive number of seconds, got 0"),
        ('task = "t"\n[policy]\nkind="outputs"\noutputs=[]\n[[tools]]\nname = "a"\nkind = "calculator"\ntimeout = -1.5\n',
         "plan.toml:8: [[tools]] #1 (a): timeout must be a positive number of seconds, got -1.5"),
        ('task = "t"\n[guards]\ntool_timeout = 1e8\n[policy]\nkind="outputs"\noutputs=[]\n',
         "plan.toml:3: [guards]: tool_timeout must be at most 300 seconds, got 1e+08"),
        ('task = "t"\n[policy]\nkind="outputs"\noutputs=[]\n[[tools]]\nname = "a"\nkind = "calculator"\ntimeout = 301\n',
         "plan.toml:8: [[tools]] #1 (a): timeout must be at most 300 seconds, got 301"),
    ],
)
def test_mistakes_name_the_file_and_line(tmp_path, text, expected):
    assert expected in error_of(tmp_path, text)


PYTHON_PLAN = """\
task = "How many copies of Il Gattopardo are available?"
{declare}
[[tools]]
name = "catalog"
kind = "table"
param = "title"
rows = {{ "Il Gattopardo" = 5 }}

[[tools]]
name = "loans"
kind = "table"
param = "title"
rows = {{ "Il Gattopardo" = 3 }}

[[tools]]
name = "calc"
kind = "calculator"

[policy]
kind = "python"
callable = "{target}"
"""


def test_a_python_policy_must_be_declared_in_the_plan(tmp_path):
    text = PYTHON_PLAN.format(declare="", target="agentdbg.examples.library:good_policy")
    assert "the plan must say executes_code = true" in error_of(tmp_path, text, allow_code=True)


def test_a_python_policy_needs_the_callers_permission_and_imports_nothing_before(tmp_path):
    module = "agentdbg_test_never_imported"
    text = PYTHON_PLAN.format(declare="executes_code = true", target=f"{module}:policy")
    (tmp_path / f"{module}.py").write_text("raise SystemExit('imported!')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        message = error_of(tmp_path, text)
        assert "this plan runs Python code" in message and "--allow-code" in message
        assert module not in sys.modules
    finally:
        sys.path.remove(str(tmp_path))


def test_an_allowed_python_policy_runs(tmp_path):
    text = PYTHON_PLAN.format(declare="executes_code = true", target="agentdbg.examples.library:good_policy")
    plan = load_plan(write(tmp_path, text), allow_code=True)
    assert plan.run().answer == "2"


def test_a_python_policy_that_cannot_be_found_is_a_clear_error(tmp_path):
    text = PYTHON_PLAN.format(declare="executes_code = true", target="agentdbg.examples.library:no_such_policy")
    assert "cannot load 'agentdbg.examples.library:no_such_policy'" in error_of(tmp_path, text, allow_code=True)


def test_files_that_cannot_be_read(tmp_path):
    with pytest.raises(PlanError, match="no such file"):
        load_plan(tmp_path / "missing.toml")
    with pytest.raises(PlanError, match="is a directory"):
        load_plan(tmp_path)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(PlanError, match="not UTF-8 text"):
        load_plan(binary)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_named_pipe_is_never_read_as_a_plan(tmp_path):
    fifo = tmp_path / "plan.toml"
    os.mkfifo(fifo)
    assert finishes(lambda: looks_like_plan(fifo), fifo) is False
    with pytest.raises(PlanError, match=r"plan\.toml: is a named pipe \(FIFO\), not a regular file"):
        finishes(lambda: load_plan(fifo), fifo)


def test_a_plan_over_the_size_limit_is_refused_before_it_is_parsed(tmp_path, sample_plans, monkeypatch):
    import agentdbg.plans as plans

    monkeypatch.setattr(plans, "MAX_PLAN_BYTES", 1024)
    text = (sample_plans / "library_good.toml").read_text()
    assert len(text.encode()) > 1024
    path = tmp_path / "plan.toml"
    path.write_text(text)
    with pytest.raises(PlanError, match=r"plan\.toml: is \d\.\d KiB; plans are at most 1\.0 KiB"):
        load_plan(path)
    link = tmp_path / "link.toml"
    link.symlink_to(sample_plans / "library_good.toml")
    monkeypatch.undo()
    assert load_plan(link).name == "library-good"


def test_plans_are_recognised_by_content(tmp_path, sample_plans):
    assert looks_like_plan(sample_plans / "kv_tax.toml")
    other = write(tmp_path, '[tool.ruff]\nline-length = 100\n', "pyproject.toml")
    assert not looks_like_plan(other)
    assert not looks_like_plan(write(tmp_path, MINIMAL, "plan.jsonl"))


def test_parse_plan_from_text():
    assert parse_plan(MINIMAL).task == "What is 6 * 7?"


@pytest.mark.parametrize("name", ["library_good.toml", "kv_tax.toml", "capital_arithmetic.toml", "population.toml"])
def test_sample_plans_need_no_code(sample_plans, name):
    load_plan(sample_plans / name, allow_code=False)
