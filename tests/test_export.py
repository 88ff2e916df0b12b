"""``agentdbg convert --to otel-genai|openai-chat``: runs written for other tools, and read
back by agentdbg's own importers with every step, call, error, answer, outcome and token
count they had (docs/export.md says what only agentdbg's reading keeps, and what is lost)."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from hostile_inputs import HOSTILE, HOSTILE_LINE, NEVER_ON_A_TERMINAL, write_input
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_import_support import all_fixtures

from agentdbg import exporters, importers, outputs
from agentdbg.cli import main
from agentdbg.engine import events as ev
from agentdbg.exporters.runs import RunStream
from agentdbg.outputs import AtomicOutput
from agentdbg.plans import load_plan
from agentdbg.state import group_run
from agentdbg.trace.format import header_line
from agentdbg.trace.reader import open_trace
from agentdbg.trace.synthetic import synthetic_run
from agentdbg.trace.writer import TraceWriter, write_trace

TARGETS = list(exporters.TARGETS)
FORCED = {"transcript/edge_empty.txt": "transcript"}
START = 1_700_000_000 * 10**9
SAMPLE_PLANS = Path(__file__).resolve().parent.parent / "sample_plans"


def _forced(path: Path) -> str | None:
    return FORCED.get(f"{path.parent.name}/{path.name}")


def _export(source: Path, out: Path, target: str, format: str | None = None) -> exporters.ExportSummary:
    return exporters.export_file(source, out, target, format=format, start_ns=START)


def _read_back(path: Path, target: str) -> importers.ImportResult:
    assert importers.detect(path) == target  # detected by content, as any file would be
    return importers.convert_file(path)[1]


def _steps(events: list[ev.Event]) -> list[tuple]:
    return [(r.tool, r.args, r.call, r.thought, r.parse_error, r.output, r.error_kind, r.error, r.observation,
             r.observation_error, r.answer, r.step_tokens, r.raw) for r in group_run(events).records]


def _otlp_spans(path: Path) -> list[dict]:
    document = json.loads(path.read_text(encoding="utf-8"))
    return [span for resource in document["resourceSpans"] for scope in resource["scopeSpans"]
            for span in scope["spans"]]


def _attrs(span: dict) -> dict:
    out = {}
    for item in span["attributes"]:
        value = item["value"]
        if "arrayValue" in value:
            out[item["key"]] = [v["stringValue"] for v in value["arrayValue"]["values"]]
        else:
            out[item["key"]] = next(iter(value.values()))
    return out


# --- round trips --------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("path", all_fixtures(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_imported_run_comes_back_event_for_event(path, target, tmp_path):
    _, original = importers.convert_file(path, _forced(path))
    out = tmp_path / "export"
    summary = _export(path, out, target, _forced(path))
    assert (summary.runs, summary.steps) == (len(original.runs), original.step_count)
    back = _read_back(out, target)
    assert back.problems == [] or all("used by more than one call" in p.message or "has no chat" in p.message
                                      for p in back.problems)
    assert back.runs == original.runs  # steps, calls, errors, answers, outcome, verdict, tokens, raw records
    assert back.raw_count == original.raw_count


def _engine_plans(turn_kinds: bool = False) -> list[Path]:
    """The sample plans that run without code or a model; ``turn_kinds``: those whose runs
    hold plans, reflections or turns of several calls (written, not read back: docs/export.md)."""
    plans = []
    for path in sorted(SAMPLE_PLANS.glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        if "executes_code" not in text and "calls_model" not in text:
            kinds = "reflect = true" in text or "plan = [" in text or "actions = [" in text
            if kinds == turn_kinds:
                plans.append(path)
    return plans


def _without_keys(event: ev.Event) -> ev.Event:
    if isinstance(event, ev.Observation) and (event.key or event.replayed is not None):
        return dataclasses.replace(event, key="", replayed=None)
    return event


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("plan_path", _engine_plans(), ids=lambda p: p.stem)
def test_the_engines_runs_come_back_with_their_steps_outcome_and_tokens(plan_path, target, tmp_path):
    events = load_plan(plan_path).run().events
    trace = tmp_path / "run.jsonl"
    write_trace(trace, [events])
    out = tmp_path / "export"
    assert _export(trace, out, target).steps == group_run(events).records[-1].step
    back = _read_back(out, target).runs[0]
    assert _steps(back) == _steps(events)
    original, again = group_run(events), group_run(back)
    assert again.end == original.end
    assert again.info.task == original.info.task and again.info.tools == original.info.tools
    assert again.info.guards["max_steps"] == original.info.guards["max_steps"]
    assert again.records[-1].guards.tokens[0] == original.records[-1].guards.tokens[0]
    # What is documented as lost: memory events, approvals, operation keys and pauses, and
    # the limits of the guards other than the step budget (their counters are computed
    # again on import).
    kept = [_without_keys(e) for e in events
            if not isinstance(e, (ev.MemoryRecall, ev.MemoryUpdate, ev.Checkpoint, ev.GuardCounters, ev.RunStart,
                                  ev.Approval, ev.Operation, ev.Paused))]
    assert [e for e in back if not isinstance(e, (ev.GuardCounters, ev.RunStart))] == kept
    for before, after in zip(original.records, again.records, strict=True):
        assert after.guards.steps == before.guards.steps
        assert [after.guards.repeats[0], after.guards.errors[0]] == [before.guards.repeats[0], before.guards.errors[0]]
    assert not any(isinstance(e, (ev.MemoryRecall, ev.MemoryUpdate)) for e in back)


@pytest.mark.parametrize("target", TARGETS)
def test_a_synthetic_run_with_every_kind_of_step_comes_back(target, tmp_path):
    events = list(synthetic_run(300, seed=3))
    trace = tmp_path / "run.jsonl"
    write_trace(trace, [events, list(synthetic_run(5, seed=4, name="second"))])
    out = tmp_path / "export"
    summary = _export(trace, out, target)
    assert (summary.runs, summary.steps) == (2, 305)
    back = _read_back(out, target).runs
    assert len(back) == 2
    assert _steps(back[0]) == _steps(events)  # parse errors, unknown tools, positional arguments
    assert group_run(back[0]).end == group_run(events).end


# --- what other tools read ------------------------------------------------------------------


def test_otlp_export_follows_the_genai_conventions(tmp_path):
    trace = tmp_path / "run.jsonl"
    write_trace(trace, [load_plan(SAMPLE_PLANS / "library_hallucinating.toml").run().events])
    out = tmp_path / "spans.json"
    summary = _export(trace, out, "otel-genai")
    spans = _otlp_spans(out)
    assert summary.records == len(spans)
    roots = [s for s in spans if "parentSpanId" not in s]
    assert len(roots) == 1
    root = roots[0]
    assert root["name"].startswith("invoke_agent") and root["kind"] == 1
    assert {s["traceId"] for s in spans} == {root["traceId"]} and len(root["traceId"]) == 32
    assert all(len(s["spanId"]) == 16 and s.get("parentSpanId", root["spanId"]) == root["spanId"] for s in spans)
    assert len({s["spanId"] for s in spans}) == len(spans)
    chats = [s for s in spans if _attrs(s)["gen_ai.operation.name"] == "chat"]
    tools = [s for s in spans if _attrs(s)["gen_ai.operation.name"] == "execute_tool"]
    assert len(chats) == summary.steps and all(s["kind"] == 3 for s in chats)
    assert all(s["name"] == f"execute_tool {_attrs(s)['gen_ai.tool.name']}" and s["kind"] == 1 for s in tools)
    first = _attrs(chats[0])
    assert json.loads(first["gen_ai.input.messages"])[0]["role"] == "user"
    output = json.loads(first["gen_ai.output.messages"])[0]
    assert output["role"] == "assistant" and output["parts"][-1]["type"] == "tool_call"
    assert int(first["gen_ai.usage.input_tokens"]) > 0
    failed = [s for s in tools if s.get("status", {}).get("code") == 2]
    assert failed and _attrs(failed[0])["error.type"] == "unknown_tool"
    assert _attrs(failed[0])["gen_ai.tool.call.result"].startswith("ERROR: tool 'web_search' does not exist")
    last = json.loads(_attrs(chats[-1])["gen_ai.output.messages"])[0]
    assert last["finish_reason"] == "stop" and last["parts"][-1] == {"type": "text", "content": "2"}
    assert _attrs(root)["agentdbg.outcome"] == "answered"
    starts = [int(s["startTimeUnixNano"]) for s in sorted(spans, key=lambda s: int(s["startTimeUnixNano"]))]
    assert starts[0] == START and all(int(s["endTimeUnixNano"]) > int(s["startTimeUnixNano"]) for s in spans)
    assert int(root["endTimeUnixNano"]) >= max(int(s["endTimeUnixNano"]) for s in spans)


def test_a_parse_error_is_an_error_span_and_a_run_error_an_error_root(tmp_path):
    trace = tmp_path / "run.jsonl"
    write_trace(trace, [list(synthetic_run(102))])
    out = tmp_path / "spans.json"
    _export(trace, out, "otel-genai")
    by_step = {_attrs(s).get("agentdbg.step"): s for s in _otlp_spans(out) if s["name"] == "chat"}
    failed = by_step["101"]
    assert failed["status"] == {"code": 2, "message": "no Action or Final Answer line"}
    assert _attrs(failed)["error.type"] == "parse_error"


def test_exports_are_reproducible_and_each_run_is_its_own_trace(tmp_path):
    path = next(p for p in all_fixtures() if p.name == "conversations.jsonl")
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    _export(path, first, "otel-genai")
    _export(path, second, "otel-genai")
    assert first.read_bytes() == second.read_bytes()
    roots = [s for s in _otlp_spans(first) if "parentSpanId" not in s]
    assert len({s["traceId"] for s in roots}) == len(roots) == 3


def test_openai_chat_export_is_one_conversation_a_line_that_chat_tools_accept(tmp_path):
    trace = tmp_path / "run.jsonl"
    write_trace(trace, [load_plan(SAMPLE_PLANS / "library_hallucinating.toml").run().events,
                        load_plan(SAMPLE_PLANS / "kv_tax.toml").run().events])
    out = tmp_path / "chat.jsonl"
    summary = _export(trace, out, "openai-chat")
    lines = out.read_text(encoding="utf-8").splitlines()
    assert summary.records == len(lines) == 2
    for line in lines:
        document = json.loads(line)
        messages = document["messages"]
        assert messages[0]["role"] == "user"
        assert all(m["role"] in ("user", "assistant", "tool") for m in messages)
        asked = {c["id"] for m in messages for c in m.get("tool_calls", [])}
        assert {m["tool_call_id"] for m in messages if m["role"] == "tool"} <= asked
        for m in messages:
            for call in m.get("tool_calls", []):
                assert call["type"] == "function" and isinstance(json.loads(call["function"]["arguments"]), dict)
        assert messages[-1]["role"] == "assistant" and "tool_calls" not in messages[-1]
        assert all(t["type"] == "function" for t in document["tools"])
        assert document["agentdbg"]["outcome"] == "answered"


def _without_agentdbg(path: Path, target: str) -> None:
    """What another tool keeps: the standard fields only."""
    if target == "otel-genai":
        document = json.loads(path.read_text(encoding="utf-8"))
        for resource in document["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    span["attributes"] = [a for a in span["attributes"] if not a["key"].startswith("agentdbg.")]
        path.write_text(json.dumps(document), encoding="utf-8")
    else:
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        path.write_text("".join(json.dumps({k: v for k, v in d.items() if k != "agentdbg"}) + "\n" for d in lines),
                        encoding="utf-8")


@pytest.mark.parametrize("target", TARGETS)
def test_the_standard_fields_alone_keep_the_steps_calls_and_answer(target, tmp_path):
    events = load_plan(SAMPLE_PLANS / "library_hallucinating.toml").run().events
    trace = tmp_path / "run.jsonl"
    write_trace(trace, [events])
    out = tmp_path / "export"
    _export(trace, out, target)
    _without_agentdbg(out, target)
    back = group_run(_read_back(out, target).runs[0])
    original = group_run(events)
    assert [r.tool for r in back.records] == [r.tool for r in original.records]
    # One positional text goes under the tool's only parameter (``input`` for an unknown tool).
    assert [r.args for r in back.records if r.tool] == [
        {"input": "Il Gattopardo copies"}, {"title": "Il Gattopardo"}, {"title": "Il Gattopardo"},
        {"expression": "5 - 3"}]
    assert [r.observation for r in back.records] == [r.observation for r in original.records]
    assert back.end.outcome == "answered" and back.end.answer == original.end.answer
    assert back.info.task == original.info.task
    # Documented as lost to a reader of the standard fields: error kinds become what a span
    # or a message can say, and a chat message carries no token counts.
    tokens = back.records[-1].guards.tokens[0]
    assert tokens == (original.records[-1].guards.tokens[0] if target == "otel-genai" else 0)
    errors = [r.error_kind for r in back.records if r.is_error]
    assert errors == (["exception"] if target == "otel-genai" else [])


# --- hostile text -----------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_hostile_text_is_valid_json_inert_on_a_terminal_and_comes_back_unchanged(target, tmp_path, capsys):
    source = write_input("trace", tmp_path)
    out = tmp_path / "export"
    assert main(["convert", str(source), "--to", target, "-o", str(out)]) == 0
    printed = capsys.readouterr()
    assert NEVER_ON_A_TERMINAL.search(printed.out + printed.err) is None
    text = out.read_text(encoding="utf-8")
    assert NEVER_ON_A_TERMINAL.search(text) is None  # escaped: `cat` on the export is harmless
    documents = [json.loads(text)] if target == "otel-genai" else [json.loads(line) for line in text.splitlines()]
    assert documents
    back = _read_back(out, target)
    run = group_run(back.runs[0])
    assert run.info.task == HOSTILE and run.info.name == HOSTILE and run.end.outcome == HOSTILE
    assert run.records[0].tool == HOSTILE and run.records[0].args == {HOSTILE: HOSTILE}
    assert run.records[1].parse_error == HOSTILE and run.records[1].output == HOSTILE
    assert run.records[2].args == HOSTILE and run.records[2].answer == HOSTILE


def test_a_trace_converted_from_another_format_is_inert_on_a_terminal_and_exact(tmp_path):
    source = tmp_path / "chat.json"  # no lone surrogate: the text is written as it is, but for what a terminal obeys
    source.write_text(json.dumps({"messages": [{"role": "user", "content": HOSTILE_LINE},
                                               {"role": "assistant", "content": HOSTILE_LINE}]}, ensure_ascii=False),
                      encoding="utf-8")
    out = tmp_path / "run.jsonl"
    assert main(["convert", str(source), "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert NEVER_ON_A_TERMINAL.search(text) is None and "\\u202e" in text and "\\u009b" in text
    document = open_trace(out, background=False)
    try:
        run = group_run(list(document.runs[0].iter_events()))
    finally:
        document.close()
    assert run.info.task == HOSTILE_LINE and run.end.answer == HOSTILE_LINE


# --- streaming --------------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_export_writes_as_it_reads(target, tmp_path):
    """Steps are written while later ones are still unread: the document is never held."""
    out = AtomicOutput(tmp_path / "export")
    seen_before_end: list[int] = []

    def events():
        for event in synthetic_run(2_000):
            if isinstance(event, ev.RunEnd):
                seen_before_end.append(out.bytes_written)
            yield event

    exporters.TARGETS[target].export([RunStream(events(), 1)], out, start_ns=START)
    out.commit()
    text = (tmp_path / "export").read_text(encoding="utf-8")
    # Everything but the run's own span (OTLP), or but the facts that follow the messages
    # (chat; they wait in a temporary file, not in memory), was out before the run ended.
    steps_end = len(text) - 3000 if target == "otel-genai" else text.index('],"tools":')
    assert seen_before_end and seen_before_end[0] >= steps_end - 1000


# --- the command ------------------------------------------------------------------------------


def test_convert_to_a_target_reads_a_trace_and_says_what_it_wrote(tmp_path, capsys):
    trace = tmp_path / "run.jsonl"
    write_trace(trace, [list(synthetic_run(10))])
    out = tmp_path / "spans.json"
    assert main(["convert", str(trace), "--to", "otel-genai", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "(trace) ->" in printed and "(otel-genai): 1 run, 10 steps, 20 spans" in printed
    assert "resourceSpans" in out.read_text(encoding="utf-8")
    assert main(["convert", str(trace), "-o", str(tmp_path / "again.jsonl")]) == 2  # the default is unchanged
    assert "already an agentdbg trace" in capsys.readouterr().err


def test_convert_to_refuses_to_overwrite_without_force(tmp_path, capsys):
    source = next(p for p in all_fixtures() if p.name == "weather_request.json")
    out = tmp_path / "out.json"
    out.write_text("keep me", encoding="utf-8")
    assert main(["convert", str(source), "--to", "openai-chat", "-o", str(out)]) == 2
    assert "--force" in capsys.readouterr().err and out.read_text(encoding="utf-8") == "keep me"
    assert main(["convert", str(source), "--to", "openai-chat", "-o", str(out), "--force"]) == 0
    assert "1 run, 4 steps, 1 line" in capsys.readouterr().out


def test_an_unknown_target_lists_the_choices(tmp_path, capsys):
    source = next(p for p in all_fixtures() if p.name == "weather_request.json")
    assert main(["convert", str(source), "--to", "yaml", "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "agentdbg-trace, otel-genai, openai-chat" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content, message", [
    ('{"hello": "world"}', "Formats tried"),
    ("", ": is empty"),
])
def test_unusable_input_is_one_clear_error_and_writes_nothing(content, message, tmp_path, capsys):
    source = tmp_path / "in.json"
    source.write_text(content, encoding="utf-8")
    out = tmp_path / "out.json"
    assert main(["convert", str(source), "--to", "otel-genai", "-o", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["in.json"]  # no output, no temporary file left


@pytest.mark.parametrize("target", TARGETS)
def test_a_trace_with_no_run_is_refused_and_the_old_output_kept(target, tmp_path, capsys):
    source = tmp_path / "empty.jsonl"
    source.write_text(header_line(), encoding="utf-8")  # a recording that never started a run
    out = tmp_path / "out.json"
    out.write_text("keep me", encoding="utf-8")
    assert main(["convert", str(source), "--to", target, "-o", str(out), "--force"]) == 2
    assert f"{source}: no runs in it" in capsys.readouterr().err
    assert out.read_text(encoding="utf-8") == "keep me" and sorted(os.listdir(tmp_path)) == ["empty.jsonl", "out.json"]


def test_a_symlink_at_the_output_is_replaced_never_written_through(tmp_path, capsys):
    source = next(p for p in all_fixtures() if p.name == "weather_request.json")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    link = tmp_path / "out.json"
    link.symlink_to(victim)
    assert main(["convert", str(source), "--to", "otel-genai", "-o", str(link), "--force"]) == 0
    assert victim.read_text(encoding="utf-8") == "precious"
    assert not link.is_symlink() and "resourceSpans" in link.read_text(encoding="utf-8")


def test_a_failed_export_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    source = next(p for p in all_fixtures() if p.name == "weather_request.json")
    out = tmp_path / "out.json"
    out.write_text("old", encoding="utf-8")

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(exporters.TARGETS["otel-genai"], "export", broken)
    with pytest.raises(OSError):
        _export(source, out, "otel-genai")
    assert out.read_text(encoding="utf-8") == "old"
    assert sorted(os.listdir(tmp_path)) == ["out.json"]


def test_an_output_interrupted_as_it_is_opened_leaves_no_temporary_file(tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(outputs, "open", interrupted, raising=False)  # Ctrl-C once the file is made
    with pytest.raises(KeyboardInterrupt):
        AtomicOutput(tmp_path / "out.json")
    assert os.listdir(tmp_path) == []


def test_an_output_gets_the_permissions_of_a_new_file_and_the_umask_is_left_alone(tmp_path, monkeypatch):
    real_umask = os.umask
    previous = real_umask(0o027)
    try:
        calls = []
        monkeypatch.setattr(os, "umask", lambda mask: calls.append(mask) or real_umask(mask))
        with AtomicOutput(tmp_path / "out.json") as out:
            out.write("{}")
    finally:
        real_umask(previous)
    assert calls == []  # changing it, even for a moment, would change it for every thread
    assert stat.S_IMODE(os.stat(tmp_path / "out.json").st_mode) == 0o640  # 0o666 less the umask, not 0o600


@pytest.mark.parametrize("target", ["agentdbg-trace", *TARGETS])
def test_a_conversion_interrupted_midway_leaves_the_old_file_and_no_temporary_file(target, tmp_path, monkeypatch):
    source = next(p for p in all_fixtures() if p.name == "weather_request.json")
    out = tmp_path / "out"
    out.write_text("old", encoding="utf-8")
    real = AtomicOutput.write_bytes if target in TARGETS else TraceWriter.write
    calls = []

    def interrupted(self, *args):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, *args)

    monkeypatch.setattr(AtomicOutput if target in TARGETS else TraceWriter,
                        "write_bytes" if target in TARGETS else "write", interrupted)
    assert main(["convert", str(source), "--to", target, "-o", str(out), "--force"]) == 130
    assert len(calls) == 2 and out.read_text(encoding="utf-8") == "old"
    assert sorted(os.listdir(tmp_path)) == ["out"]


# --- damaged agentdbg facts ----------------------------------------------------------------

ANY_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8),
              st.sampled_from(["answered", "unknown_tool", "max_steps", "exception", "raw", "error"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(
        ["message", "output", "kind", "source", "data", "note", "type", "correct", "score", "grader", "name",
         "max_steps", "params"]), inner, max_size=3)), max_leaves=12)


@functools.cache
def _exported(target: str) -> str:
    """A run with every kind of step (a parse error at step 101), exported once."""
    folder = Path(tempfile.mkdtemp())
    trace = folder / "run.jsonl"
    write_trace(trace, [list(synthetic_run(110, seed=1))])
    out = folder / target
    _export(trace, out, target)
    text = out.read_text(encoding="utf-8")
    shutil.rmtree(folder)
    return text


def _well_formed(result: importers.ImportResult) -> None:
    for run in result.runs:
        for event in run:
            assert ev.event_from_dict(json.loads(json.dumps(event.to_dict()))) == event


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_facts_beside_chat_messages_are_ignored_never_a_crash(data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("chat")
    document = json.loads(_exported("openai-chat"))
    facts = document["agentdbg"]
    for key in data.draw(st.lists(st.sampled_from(sorted(facts)), max_size=4)):
        facts[key] = data.draw(ANY_JSON)
    step = data.draw(st.sampled_from(sorted(facts["facts"]) or ["1"])) if isinstance(facts.get("facts"), dict) else "1"
    if isinstance(facts.get("facts"), dict):
        facts["facts"][step] = data.draw(st.dictionaries(st.sampled_from(
            ["thought", "not_answer", "parse_error", "error", "observation", "observation_error", "observation_id",
             "positional", "no_id", "id", "call", "answer", "raw"]), ANY_JSON, max_size=4))
    path = folder / "damaged.jsonl"
    path.write_text(json.dumps(document) + "\n", encoding="utf-8")
    try:
        _, result = importers.convert_file(path, "openai-chat")
    except importers.NotImportable:
        return
    _well_formed(result)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_agentdbg_attributes_are_ignored_never_a_crash(data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("otel")
    document = json.loads(_exported("otel-genai"))
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for span in data.draw(st.lists(st.sampled_from(spans), max_size=4)):
        for item in span["attributes"]:
            if item["key"].startswith("agentdbg.") and data.draw(st.booleans()):
                value = data.draw(ANY_JSON)
                item["value"] = {"stringValue": json.dumps(value)} if data.draw(st.booleans()) else (
                    {"boolValue": value} if isinstance(value, bool) else {"stringValue": str(value)})
    path = folder / "damaged.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    try:
        _, result = importers.convert_file(path, "otel-genai")
    except importers.NotImportable:
        return
    _well_formed(result)
