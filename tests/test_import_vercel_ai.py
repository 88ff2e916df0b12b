"""Vercel AI SDK results, from hand-written fixtures."""

from __future__ import annotations

from test_import_support import convert, counters, fixture, markers, problems_text, tools_called

from agentdbg import importers
from agentdbg.importers import vercel_ai


def test_an_ai_sdk_4_result():
    name, result, runs = convert(fixture("vercel-ai-sdk", "v4_result.json"))
    assert name == "vercel-ai-sdk"
    [run] = runs
    assert run.info.task == "How many copies of Il Gattopardo can be borrowed?"  # the saved prompt
    assert run.info.name == "gpt-4o-mini" and run.info.policy == "recorded: gpt-4o-mini"
    assert tools_called(run) == ["catalog", "loans", None]
    assert run.records[0].thought == "Owned first, then loans.\nI look the title up in the catalogue."
    assert run.records[0].args == {"title": "Il Gattopardo"}
    assert [r.observation for r in run.records] == ['{"owned": 5}', '{"on_loan": 3}', None]
    assert run.end.outcome == "answered" and run.end.answer == "2 copies can be borrowed."
    # Each step's usage on its first step; the result's summed usage is not added again.
    assert [r.step_tokens for r in run.records] == [76, 0, 270]
    assert counters(run, "tokens")[-1] == 346
    assert result.raw_count == 1  # the second step's warning


def test_ai_sdk_5_results_in_an_array_and_a_tool_error():
    _, result, runs = convert(fixture("vercel-ai-sdk", "v5_results.json"))
    assert len(runs) == 2
    run = runs[0]
    assert run.info.task == ""  # nothing saved the prompt
    assert tools_called(run) == ["catalog", "loans", None]
    assert run.records[0].thought == "Owned first.\nCatalogue."
    # A tool-error part keeps {} of the error; the message is in response.messages.
    assert run.records[1].observation == "loans service unavailable"
    assert markers(run) == ["", "error", "final"]
    assert [r.step_tokens for r in run.records] == [64, 92, 129]
    assert [raw.note for raw in run.records[2].raw] == ["source part"]
    hello = runs[1]
    assert hello.info.task == "Say hello." and hello.end.answer == "Hello."
    assert [raw.note for raw in hello.records[0].raw] == ["system message: Be brief."]
    assert result.problems == []


def test_edges():
    _, result, runs = convert(fixture("vercel-ai-sdk", "edges.json"))
    [run] = runs
    assert tools_called(run) == [None, "bash", "bash", "bash"]
    assert "not valid JSON" in run.records[0].parse_error
    assert [r.observation for r in run.records[1:]] == ["a.txt b.txt", "", None]
    # The step limit stopped it with a call pending.
    assert run.end.outcome == "unfinished" and "tool-calls" in run.end.message
    assert [r.step_tokens for r in run.records] == [49, 72, 0, 70]  # a null count is not counted
    text = problems_text(result)
    assert "'dup' is used by more than one call" in text
    assert "'ghost', which no call in the run has" in text
    notes = [raw.note for record in run.records for raw in record.raw]
    assert "step 3 is not an object" in notes


def test_a_result_with_no_step_is_an_empty_run():
    _, _, runs = convert(fixture("vercel-ai-sdk", "edge_empty.json"))
    assert runs[0].step_count == 0 and runs[0].end.outcome == "empty"


def test_non_ascii_and_hostile_text_is_kept_verbatim():
    _, _, runs = convert(fixture("vercel-ai-sdk", "hostile_unicode.json"))
    run = runs[0]
    assert run.info.name == "modèle-\x1b[5m"
    assert run.records[0].tool == "[red]catalog[/red]"
    assert run.records[0].thought == "\x1b]52;c;ZXZpbA==\x07 copy?"
    assert run.records[0].observation == "\x1b[2J\x1b[H cleared 北京 ✓"
    assert run.end.answer == "Risposta: \x1b[1A\x1b[2K due copie — مرحبا"


def test_sniff():
    head = fixture("vercel-ai-sdk", "v5_results.json").read_text(encoding="utf-8")
    assert [name for name, ok, _ in importers.sniff_all(head) if ok] == ["vercel-ai-sdk"]
    assert vercel_ai.sniff('{"steps": [{"stepType": "initial"}]}')[0]
    assert vercel_ai.sniff('{"text": "x", "finishReason": "stop", "usage": {"promptTokens": 1}}')[0]
    ok, why = vercel_ai.sniff('{"messages": [{"role": "user", "content": "x"}]}')
    assert not ok and "stepType" in why
