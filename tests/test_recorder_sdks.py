"""The openai and anthropic SDK clients, wrapped, record a real tool loop: each client talks
to a model API on 127.0.0.1 that replays scripted replies in the API's JSON shape."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from loopback_models import ScriptedModelServer, anthropic_reply, openai_reply

import agentdbg
from agentdbg.integrations import anthropic as anthropic_integration
from agentdbg.integrations import openai as openai_integration

openai = pytest.importorskip("openai", reason="the openai extra is not installed")
anthropic = pytest.importorskip("anthropic", reason="the anthropic extra is not installed")


def search(query: str, limit: int = 3) -> str:
    """Search the catalogue."""
    if query == "boom":
        raise RuntimeError("index offline")
    return f"{limit} results for {query}"


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def of_step(records: list[dict], n: int) -> dict[str, dict]:
    return {r["type"]: r for r in records if r["step"] == n}


def openai_client(server: ScriptedModelServer, **kwargs):
    return openai.OpenAI(api_key="test", base_url=server.url + "/v1", max_retries=0, **kwargs)


def anthropic_client(server: ScriptedModelServer):
    return anthropic.Anthropic(api_key="test", base_url=server.url, max_retries=0)


def test_openai_loop_is_recorded_step_by_step(tmp_path):
    path = tmp_path / "run.jsonl"
    replies = [
        openai_reply("I will search twice.", [("call_1", "search", '{"query": "gattopardo"}'),
                                               ("call_2", "search", '{"query": "boom"}')],
                     prompt_tokens=100, completion_tokens=20),
        openai_reply(None, [("call_3", "search", '{"query": ')]),  # the model wrote broken JSON
        openai_reply("There are 3 copies."),
    ]
    with ScriptedModelServer(replies) as server, agentdbg.record(path, tools=[search]) as rec:
        client = rec.wrap(openai_client(server))
        messages = [{"role": "user", "content": "How many copies of Il Gattopardo?"}]
        tools = openai_integration.tool_definitions(rec)
        while True:
            reply = client.chat.completions.create(model="gpt-test", messages=messages, tools=tools)
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                break
            for call in message.tool_calls:
                step = rec.call(call)  # run through the recorder's tools: errors keep their flag
                messages.append({"role": "tool", "tool_call_id": call.id, "content": step.observation})
    records = lines(path)
    start = records[0]
    assert start["task"] == "How many copies of Il Gattopardo?"
    assert [t["name"] for t in start["tools"]] == ["search"]
    one, two, three, four = (of_step(records, n) for n in (1, 2, 3, 4))
    assert one["thought"]["text"] == "I will search twice." and "thought" not in two
    assert one["action"] == {"type": "action", "step": 1, "tool": "search", "args": {"query": "gattopardo"},
                             "call": "search({'query': 'gattopardo'})", "id": "call_1"}
    assert one["observation"]["text"] == "3 results for gattopardo"
    assert one["guards"]["step_tokens"] == 120 and two["guards"].get("step_tokens", 0) == 0
    assert two["error"]["kind"] == "exception" and two["observation"]["error"] is True
    assert three["parse_error"]["message"].startswith("tool call 'search': arguments are not valid JSON")
    assert four["final_answer"]["answer"] == "There are 3 copies."
    assert records[-1]["outcome"] == "answered" and records[-1]["steps"] == 4
    assert four["guards"]["tokens"] == [240, None] and four["guards"]["errors"] == [2, None]
    # the model was sent what the loop sent: the error as the tool message's text
    sent = server.requests[1][1]["messages"]
    assert [m["content"] for m in sent if m["role"] == "tool"] == ["3 results for gattopardo",
                                                                   "ERROR: RuntimeError: index offline"]


def test_openai_tool_messages_the_loop_sends_are_the_observations(tmp_path):
    path = tmp_path / "run.jsonl"
    replies = [openai_reply("Looking.", [("c1", "lookup", '{"title": "x"}')]), openai_reply("Done: 5.")]
    with ScriptedModelServer(replies) as server, agentdbg.record(path, task="count") as rec:
        client = openai_integration.wrap(openai_client(server), rec)
        messages = [{"role": "user", "content": "count"}]
        tools = [{"type": "function", "function": {"name": "lookup", "description": "Find a title.",
                                                   "parameters": {"type": "object",
                                                                  "properties": {"title": {"type": "string"}},
                                                                  "required": ["title"]}}}]
        reply = client.chat.completions.create(model="m", messages=messages, tools=tools)
        call = reply.choices[0].message.tool_calls[0]
        assert rec.waiting[0].id == "c1"
        messages += [reply.choices[0].message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": "5"}]
        client.chat.completions.create(model="m", messages=messages, tools=tools)
    records = lines(path)
    assert records[0]["tools"] == [{"name": "lookup", "description": "Find a title.", "params": {"title": "str"},
                                    "dangerous": False}]
    assert of_step(records, 1)["observation"] == {"type": "observation", "step": 1, "text": "5", "id": "c1"}
    assert records[-1]["answer"] == "Done: 5."


def test_openai_async_client_is_recorded_too(tmp_path):
    path = tmp_path / "run.jsonl"
    replies = [openai_reply(None, [("c1", "search", '{"query": "x"}')]), openai_reply("ok")]

    async def loop(server, rec):
        client = rec.wrap(openai.AsyncOpenAI(api_key="test", base_url=server.url + "/v1", max_retries=0))
        messages = [{"role": "user", "content": "q"}]
        while True:
            reply = await client.chat.completions.create(model="m", messages=messages)
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return
            for call in message.tool_calls:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": rec.call(call).observation})

    with ScriptedModelServer(replies) as server, agentdbg.record(path, tools=[search]) as rec:
        asyncio.run(loop(server, rec))
    assert rec.outcome.status == "answered" and rec.step_count == 2
    assert of_step(lines(path), 1)["observation"]["text"] == "3 results for x"


def test_a_guard_stops_the_openai_loop_before_the_repeated_call_runs(tmp_path):
    path = tmp_path / "run.jsonl"
    same = ("c", "search", '{"query": "x"}')
    replies = [openai_reply(None, [same]) for _ in range(5)]
    ran = []
    with ScriptedModelServer(replies) as server, agentdbg.record(path, tools=[search], repeat="any") as rec:
        client = rec.wrap(openai_client(server))
        messages = [{"role": "user", "content": "q"}]
        while True:  # a loop with no stop of its own
            reply = client.chat.completions.create(model="m", messages=messages)
            for call in reply.choices[0].message.tool_calls:
                ran.append(call.id)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": rec.call(call).observation})
    assert len(server.requests) == 2 and ran == ["c"]
    assert rec.outcome.status == "action repeated" and lines(path)[-1]["guard"] == "repetition"


def test_openai_streaming_is_refused_with_a_reason(tmp_path):
    with ScriptedModelServer([]) as server, agentdbg.record(tmp_path / "run.jsonl") as rec:
        client = rec.wrap(openai_client(server))
        with pytest.raises(ValueError, match="stream=True is not supported"):
            client.chat.completions.create(model="m", messages=[], stream=True)
        assert server.requests == []
        assert client.models is client._wrapped.models  # the rest of the client is its own


def test_anthropic_loop_is_recorded_with_its_error_flags(tmp_path):
    path = tmp_path / "run.jsonl"
    replies = [
        anthropic_reply("Two lookups.", [("tu_1", "search", {"query": "a"}), ("tu_2", "search", {"query": "b"})],
                        input_tokens=100, output_tokens=20, cache_read=30),
        anthropic_reply("Found 3.", input_tokens=10, output_tokens=5),
    ]
    with ScriptedModelServer(replies) as server, agentdbg.record(path, tools=[search]) as rec:
        client = rec.wrap(anthropic_client(server))
        messages = [{"role": "user", "content": [{"type": "text", "text": "Find a and b."}]}]
        tools = anthropic_integration.tool_definitions([search])
        assert tools == [{"name": "search", "description": "Search the catalogue.",
                          "input_schema": {"type": "object", "properties": {"query": {"type": "string"},
                                                                             "limit": {"type": "integer"}},
                                           "required": ["query"]}}]
        while True:
            reply = client.messages.create(model="claude-test", max_tokens=100, messages=messages, tools=tools)
            messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
            if reply.stop_reason != "tool_use":
                break
            results = []
            for block in reply.content:
                if block.type == "tool_use":  # the loop runs its tools itself and says which failed
                    failed = block.input["query"] == "b"
                    results.append({"type": "tool_result", "tool_use_id": block.id, "is_error": failed,
                                    "content": "not found" if failed else search(**block.input)})
            messages.append({"role": "user", "content": results})
    records = lines(path)
    assert records[0]["task"] == "Find a and b."
    one, two, three = (of_step(records, n) for n in (1, 2, 3))
    assert one["thought"]["text"] == "Two lookups." and one["action"]["id"] == "tu_1"
    assert one["guards"]["step_tokens"] == 150
    assert one["observation"] == {"type": "observation", "step": 1, "text": "3 results for a", "id": "tu_1"}
    assert two["observation"] == {"type": "observation", "step": 2, "text": "not found", "error": True, "id": "tu_2"}
    assert two["guards"]["errors"] == [1, None]
    assert three["final_answer"]["answer"] == "Found 3." and three["guards"]["tokens"] == [165, None]


def test_anthropic_input_that_is_not_an_object_is_a_parse_error(tmp_path):
    path = tmp_path / "run.jsonl"
    replies = [anthropic_reply(None, [("tu_1", "search", ["not", "an", "object"])]), anthropic_reply("ok")]
    with ScriptedModelServer(replies) as server, agentdbg.record(path, tools=[search]) as rec:
        client = rec.wrap(anthropic_client(server))
        messages = [{"role": "user", "content": "q"}]
        reply = client.messages.create(model="m", max_tokens=10, messages=messages)
        step = rec.call(reply.content[0])
        assert step.parse_error == "tool call 'search': arguments should be a JSON object, got list"
        client.messages.create(model="m", max_tokens=10, messages=messages)
    assert rec.outcome.status == "answered"


def test_wrap_refuses_a_client_it_does_not_know(tmp_path):
    with agentdbg.record(tmp_path / "run.jsonl") as rec, pytest.raises(TypeError, match="openai or anthropic"):
        rec.wrap(object())
