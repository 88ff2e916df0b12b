"""``agentdbg convert PLAN -o run.jsonl`` runs the plan headless and writes its trace."""

from __future__ import annotations

from pathlib import Path

from agentdbg.cli import main
from agentdbg.documents import open_document

PLANS = Path(__file__).resolve().parents[1] / "sample_plans"


def test_converting_a_plan_runs_it_and_writes_the_trace(tmp_path, capsys):
    out = tmp_path / "stuck.jsonl"
    assert main(["convert", str(PLANS / "library_stuck.toml"), "-o", str(out)]) == 0
    assert "2 steps" in capsys.readouterr().out
    document = open_document(out)
    try:
        assert document.kind == "trace" and document.runs[0].step_count == 2
    finally:
        document.close()
    assert main(["convert", str(PLANS / "library_stuck.toml"), "-o", str(out)]) == 2  # exists
    assert "exists" in capsys.readouterr().err
    assert main(["convert", str(PLANS / "library_stuck.toml"), "-o", str(out), "--force"]) == 0


def test_a_plan_with_dangerous_tools_needs_approve_as_record_does(tmp_path, capsys):
    out = tmp_path / "delete.jsonl"
    assert main(["convert", str(PLANS / "dangerous_delete.toml"), "-o", str(out)]) == 2
    assert "--approve" in capsys.readouterr().err and not out.exists()
    assert main(["convert", str(PLANS / "dangerous_delete.toml"), "-o", str(out), "--approve", "never"]) == 0
    assert out.is_file()
