"""Real public files of the ReAct and Reflexion papers' harnesses (tests/fixtures/import/real/,
see each SOURCE.md): detected, converted with the figures checked by hand against each file,
and opened in the debugger."""

from __future__ import annotations

import ast
from pathlib import Path

from test_import_support import IMPORT_FIXTURES, convert
from test_tui_support import SIZE, pane_text, press, settle

from agentdbg.documents import open_document
from agentdbg.tui.app import DebuggerApp

REAL = IMPORT_FIXTURES / "real"


def real(fmt: str, name: str) -> Path:
    return REAL / fmt / name


def _retries(record) -> list[str]:
    return [r.data for r in record.raw if r.source == "react-paper retry"]


# --- ReAct paper: the harness's retries ('ohh...') -----------------------------------------

def test_fever_runs_with_retries_match_their_result_dicts():
    path = real("react-paper", "fever_runs_retries.txt")
    text = path.read_text(encoding="utf-8")
    assert text.count("\nohh...") == 3
    said = [ast.literal_eval(line.strip()) for line in text.splitlines() if line.startswith("{'steps'")]
    name, result, runs = convert(path)
    assert name == "react-paper"
    assert result.problems == []  # every episode's steps and answer agree with its result dict
    assert [r.info.name for r in runs] == ["question 2817", "question 3991", "question 5780", "question 6626"]
    assert [(r.step_count, r.end.answer) for r in runs] == [(d["steps"], d["answer"]) for d in said]
    assert [(r.step_count, r.end.answer) for r in runs] == [
        (7, "NOT ENOUGH INFO"), (2, "REFUTES"), (2, "SUPPORTS"), (2, "SUPPORTS")]
    assert result.raw_count == 4 * 2 + 3  # result dicts and tallies, the three retries
    # 2817: after six Lookups the model wrote 'Action 7:' and Finish on lines of their own.
    rio = runs[0]
    assert rio.records[5].observation == "No more results."
    assert _retries(rio.records[6]) == [" I give up.\n\nAction 7:\n\nFinish[NOT ENOUGH INFO]"]
    assert rio.records[6].thought == "I give up." and rio.records[6].answer == "NOT ENOUGH INFO"
    # 3991: 'Action 2' without its colon; the first observation ends where the page ends.
    meteora = runs[1]
    assert meteora.records[0].observation.endswith("etymologically related to meteor.[6].")
    [output] = _retries(meteora.records[1])
    assert output.startswith(" The first sentence says \"The Meteora") and output.endswith("Linkin Park.\nAction 2")
    assert meteora.records[1].thought == output.split("\n")[0].strip()
    assert _retries(runs[2].records[1]) == []
    [output] = _retries(runs[3].records[1])
    assert output.endswith("This supports the claim") and "\n" not in output
    assert all(not r.is_error for run in runs for r in run.records)


async def test_a_retry_shows_in_the_debugger_with_its_step():
    app = DebuggerApp(open_document(real("react-paper", "fever_runs_retries.txt")), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "end")
        header = app.query_one("#header").text
        assert "step 7/7" in header and "outcome: answered" in header
        assert "react-paper retry" in pane_text(app, "scratchpad")
