"""LangChain / LangSmith runs: run trees, upload batches, flat lists of runs, from
hand-written fixtures and real files."""

from __future__ import annotations

import json

from test_import_support import (
    IMPORT_FIXTURES,
    convert,
    counters,
    fixture,
    markers,
    problems_text,
    tools_called,
)

from agentdbg.importers import langchain

REAL = IMPORT_FIXTURES / "real" / "langchain"


def test_a_run_tree_with_serialized_messages():
    name, result, runs = convert(fixture("langchain", "agent_tree.json"))
    assert name == "langchain"
    [run] = runs
    assert run.info.name == "LibraryAgent"
    assert run.info.task == "How many copies of Il Gattopardo can I borrow?"
    assert run.info.policy == "recorded: gpt-4o-mini (LangChain runs)"
    assert [t["name"] for t in run.info.tools] == ["catalog", "loans"]
    assert run.info.tools[0]["params"] == {"title": "str"}
    assert tools_called(run) == ["catalog", "loans", None]
    assert run.records[0].thought == "I need the total and the copies on loan."
    assert [e.id for e in run.records[1].events if e.type == "action"] == ["call_loan"]
    assert [r.observation for r in run.records[:2]] == ["5", "3"]  # ToolMessage outputs
    assert [r.step_tokens for r in run.records] == [352, 0, 432]  # usage_metadata, once per llm run
    assert (run.end.outcome, run.end.answer) == ("answered", "You can borrow 2 copies.")
    # the prompt run and the retriever under the loans tool are kept raw
    assert result.raw_count == 2
    assert run.records[0].raw[0].note == "prompt run 'ChatPromptTemplate'"
    assert run.records[1].raw[0].note == "retriever run 'loans_db' inside tool 'loans'"
    assert "child_runs" not in run.records[1].raw[0].data
    assert result.problems == []


def test_upload_batches_are_merged_run_by_run():
    _, result, runs = convert(fixture("langchain", "batches.json"))
    [run] = runs
    assert run.info.name == "WeatherAgent" and run.info.task == "Is it raining in Oslo?"
    assert run.info.policy == "recorded: claude-sonnet-4-5 (LangChain runs)"
    # the tool's patch has no id: its dotted_order finds the run it finishes
    assert tools_called(run) == ["weather", None]
    assert run.records[0].thought == "I should check the weather service."  # a thinking part
    assert run.records[0].args == {"city": "Oslo"}
    assert run.records[0].observation == "light rain, 9 °C"  # a tool without a call id: by name
    assert run.records[0].step_tokens == 240  # llm_output.usage: input + output
    assert (run.end.outcome, run.end.answer) == ("answered", "Yes: light rain and 9 °C in Oslo.")
    assert result.raw_count == 0 and result.problems == []


def test_a_text_react_agent_from_a_flat_list_of_runs():
    _, result, runs = convert(fixture("langchain", "react_runs.jsonl"))
    [run] = runs
    assert run.info.task == "What is the temperature in Oslo?"
    # the tool run follows a turn that wrote its action as text: one step, thought and action
    assert tools_called(run) == ["search", None]
    assert run.records[0].thought == "Thought: I should search.\nAction: search\nAction Input: weather in Oslo"
    assert run.records[0].args == "weather in Oslo" and run.records[0].parse_error is None
    assert run.records[0].observation == "Oslo: 9 °C, light rain"
    # the final turn ends with the chain's output: that turn is the answer
    assert run.records[1].thought == "Thought: I now know the final answer\nFinal Answer: 9 °C"
    assert run.end.answer == "9 °C"
    # run-level token figures: total_tokens, else prompt + completion; the llm inside the
    # tool is the tool's business, kept raw, not counted
    assert [r.step_tokens for r in run.records] == [170, 218]
    assert result.raw_count == 1 and run.records[0].raw[0].note == "llm run 'OpenAI' inside tool 'search'"


def test_edges_invalid_arguments_duplicated_ids_no_reply_a_tool_nobody_asked_for_and_failures():
    _, result, runs = convert(fixture("langchain", "edges.json"))
    [run] = runs
    assert run.info.task == "Find the broken config."  # a chat-style {role, content} input
    assert tools_called(run) == ["lookup", None, "read", "lint", "restart", None]
    assert "not valid JSON" in run.records[1].parse_error  # from invalid_tool_calls
    assert run.records[1].observation == "error: arguments are not JSON"  # a ToolMessage sent back
    assert [r.observation for r in run.records[2:5]] == ["port: eighty", None, "restarted"]
    failed = run.records[5]  # the model call itself failed
    assert failed.error_kind == "policy" and failed.error == "RateLimitError('Error code: 429 - rate limit reached')"
    assert markers(run)[5] == "error" and counters(run, "errors")[-1] == 1
    assert run.end.outcome == "error"
    assert run.end.message.startswith("GraphRecursionError('Recursion limit of 25 reached")
    assert "'dup' is used by more than one call" in problems_text(result)
    assert result.raw_count == 1 and run.records[5].raw[0].note == "chain run 'should_continue'"


def test_a_root_that_has_not_finished_is_an_empty_run():
    _, _, runs = convert(fixture("langchain", "edge_empty.json"))
    assert runs[0].info.task == "Say nothing."
    assert runs[0].step_count == 0 and runs[0].end.outcome == "empty"


def test_hostile_and_non_ascii_text_is_kept_verbatim():
    _, _, runs = convert(fixture("langchain", "hostile_unicode.json"))
    run = runs[0]
    assert run.info.name == "[link=https://evil.example]agent[/link] 代理 \x1b]52;c;ZXZpbA==\x07"
    assert run.records[0].tool == "echo[/]"
    assert run.records[0].args == {"text": "[link=https://evil.example]x[/link] \x1b]52;c;ZXZpbA==\x07"}
    assert run.records[0].observation == "\x1b[31m[blink]red[/blink]\x1b[0m \x1b[1A\x1b[2K ✓"
    assert run.end.answer == "[/]Fertig — 完了 \x1b]52;c;cm0=\x07"


def test_messages_in_every_written_form():
    assert langchain.message({"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"],
                              "kwargs": {"content": "hi"}}) == {"content": "hi", "type": "ai"}
    assert langchain.message({"type": "human", "data": {"content": "q"}}) == {"content": "q", "type": "human"}
    assert langchain.message({"role": "assistant", "content": "a"})["type"] == "ai"
    assert langchain.message("text") is None


def test_runs_linked_in_a_loop_do_not_hang(tmp_path):
    loop = [{"id": "a", "run_type": "chain", "parent_run_id": "b", "inputs": {"input": "q"}},
            {"id": "b", "run_type": "tool", "name": "t", "parent_run_id": "a", "inputs": {}}]
    path = tmp_path / "loop.json"
    path.write_text(json.dumps(loop), encoding="utf-8")
    _, result, runs = convert(path)
    assert len(runs) == 1 and sum(r.step_count for r in runs) == 1


def test_sniff():
    assert langchain.sniff('{"id": "x", "name": "Agent", "run_type": "chain", "inputs": {')[0]
    assert langchain.sniff('{"post": [{"id": "x", "run_type": "llm"')[0]
    assert langchain.sniff('{"patch": [{"dotted_order": "1"}], "post": [')[0]
    ok, why = langchain.sniff('{"run_type": "kitchen"}')
    assert not ok and "run_type" in why
    assert not langchain.sniff('[{"role": "user", "content": "q"}]')[0]


# --- real files ----------------------------------------------------------------------------

def test_real_run_tree_written_by_langchain_core():
    path = REAL / "generated" / "langchain_run_tree.json"
    tree = json.loads(path.read_text(encoding="utf-8"))
    name, result, runs = convert(path)
    assert name == "langchain"
    [run] = runs
    assert run.info.name == tree["name"] == "LibraryAgent"
    assert run.info.task == tree["inputs"]["input"]
    llm_runs = [r for r in tree["child_runs"] if r["run_type"] == "llm"]
    usage = [r["outputs"]["generations"][0][0]["message"]["kwargs"]["usage_metadata"]["total_tokens"] for r in llm_runs]
    assert tools_called(run) == ["catalog", "loans", None]
    assert [r.step_tokens for r in run.records] == usage == [66, 92, 129]
    assert run.records[0].observation == "5"
    failed = run.records[1]  # the tool raised: its run has the error and the traceback
    assert failed.error_kind == "exception"
    assert failed.error == "ValueError(\"loans service unavailable for 'Il Gattopardo'\")"
    assert failed.observation.endswith("ValueError: loans service unavailable for 'Il Gattopardo'")
    assert counters(run, "errors") == [0, 1, 1]
    assert run.end.answer == tree["outputs"]["output"]
    assert [t["name"] for t in run.info.tools] == ["catalog", "loans"]
    assert result.raw_count == 0 and result.problems == []


def test_real_langsmith_upload_batches():
    for name, model, task_start, tokens in (
            ("langsmith_py_wrap_openai_.json", "gpt-4o-mini", "howdy", 18),
            ("langsmith_js_wrap_openai_reasoning.json", "o1-mini", "Write a bash script", 1944)):
        path = REAL / "langsmith-sdk" / name
        payload = json.loads(path.read_text(encoding="utf-8"))
        _, result, [run] = convert(path)
        assert run.info.name == "ChatOpenAI"
        assert run.info.policy == f"recorded: {model} (LangChain runs)"
        assert run.info.task.startswith(task_start)
        assert run.step_count == 1 and run.end.outcome == "answered"
        assert run.end.answer == payload["patch"][0]["outputs"]["choices"][0]["message"]["content"]
        assert run.records[0].step_tokens == tokens == payload["patch"][0]["outputs"]["usage_metadata"]["total_tokens"]
        assert result.raw_count == 0 and result.problems == []


def test_real_agx_export_with_older_messages():
    path = REAL / "agx" / "sample_langchain_export.json"
    name, result, [run] = convert(path)
    assert name == "langchain"
    assert run.info.name == "AgentExecutor"
    assert run.info.task == "List files in the current directory and tell me what's there."
    assert run.info.policy == "recorded: gpt-5 (LangChain runs)"
    # a tool run without a call id answers the waiting call to its tool
    assert tools_called(run) == ["list_dir", None]
    assert [e.id for e in run.records[0].events if e.type == "action"] == ["call_synth_001"]
    assert run.records[0].observation == "README.md\nCargo.toml\nsrc/\n"
    assert [r.step_tokens for r in run.records] == [165, 210]  # llm_output.token_usage
    assert run.end.answer == "The directory contains README.md, Cargo.toml, and a src/ folder."
    assert result.raw_count == 0 and result.problems == []
