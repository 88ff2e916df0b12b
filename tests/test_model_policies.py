"""Model policies against a model server on the loopback interface: what is sent (the system
prompt documents the tools, the transcript is the user message, the key goes in its header),
how replies become steps, and every way a call fails becoming data, never a traceback."""

from __future__ import annotations

import json
import threading
import time

import pytest
from model_server import (
    ModelServer,
    Reply,
    anthropic_error,
    anthropic_text,
    anthropic_tool_use,
    free_port,
    openai_error,
    openai_text,
    openai_tool_call,
)

from agentdbg.engine import ReActAgent, ToolRegistry, calculator, table_lookup
from agentdbg.engine import events as ev
from agentdbg.engine.model_http import is_loopback
from agentdbg.engine.model_policies import AnthropicPolicy, ModelCallError, OpenAIChatPolicy
from agentdbg.engine.model_prompt import system_prompt
from agentdbg.plans import parse_plan

KEY = "sk-test-0123456789abcdef"
QUESTION = "How many copies of Il Gattopardo are available?"
TOOLS = """
[[tools]]
name = "catalog"
kind = "table"
description = "Total copies of a title in the catalogue."
param = "title"
rows = { "Il Gattopardo" = 5 }

[[tools]]
name = "loans"
kind = "table"
description = "Copies of a title currently on loan."
param = "title"
rows = { "Il Gattopardo" = 3 }

[[tools]]
name = "calc"
kind = "calculator"
description = "Arithmetic on numbers."
"""
GOOD_STEPS = [
    "Thought: I need the total copies.\nAction: catalog[Il Gattopardo]",
    "Thought: now the copies on loan.\nAction: loans[Il Gattopardo]",
    "Thought: I subtract.\nAction: calc[5 - 3]",
    "Thought: I have the number.\nFinal Answer: 2",
]


def plan_text(url: str, kind: str = "openai", guards: str = "max_steps = 8", **policy) -> str:
    settings = {"model": "test-model", "base_url": url, "retries": 2, "backoff": 0.01, **policy}
    lines = "\n".join(f"{key} = {json.dumps(value)}" for key, value in settings.items())
    return (f'task = "{QUESTION}"\ncalls_model = true\n\n[guards]\n{guards}\n{TOOLS}\n'
            f'[policy]\nkind = "{kind}"\n{lines}\n')


def run_plan(text: str):
    return parse_plan(text, "model.toml", allow_network=True).run()


def of_type(trace, kind: type) -> list:
    return [event for event in trace.events if isinstance(event, kind)]


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv("AGENTDBG_TEST_KEY", KEY)
    return "AGENTDBG_TEST_KEY"


# -- the system prompt -----------------------------------------------------------------------


REGISTRY_SPECS = [
    {"name": "catalog", "description": "Total copies of a title.", "params": {"title": "str"}, "dangerous": False},
    {"name": "kv_set", "description": "Store a value.", "params": {"key": "str", "value": "float"}, "dangerous": True},
]


@pytest.mark.parametrize(("format", "action", "final"), [
    ("bracket", "Action: <tool>[<argument>]", "Final Answer: <the answer>"),
    ("colon", "Action: <tool>: <argument>", "Answer: <the answer>"),
    ("json", "Action Input: <a JSON object", "Final Answer: <the answer>"),
])
def test_the_system_prompt_documents_every_tool_and_the_action_format(format, action, final):
    prompt = system_prompt(REGISTRY_SPECS, format)
    assert "- catalog(title: str): Total copies of a title." in prompt
    assert "- kv_set(key: str, value: float): Store a value. (irreversible" in prompt
    assert action in prompt and final in prompt
    assert "Never write an Observation yourself" in prompt
    example = {"bracket": "Action: catalog[<title>]", "colon": "Action: catalog: <title>",
               "json": 'For example:\nAction: kv_set\nAction Input: {"key": "...", "value": 0.5}'}[format]
    assert example in prompt


def test_the_native_system_prompt_asks_for_tool_calls_and_a_final_answer_in_text():
    prompt = system_prompt(REGISTRY_SPECS, "json", "native", instructions="Answer in Italian.")
    assert "tool-calling interface" in prompt and "Final Answer: <the answer>" in prompt
    assert "Action Input" not in prompt and prompt.endswith("Answer in Italian.")


def test_a_model_policy_refuses_the_formats_it_cannot_document():
    with pytest.raises(ValueError, match="bracket, colon or json"):
        OpenAIChatPolicy("m", format="numbered")
    with pytest.raises(ValueError, match="native tool calls are read in the json format"):
        OpenAIChatPolicy("m", format="colon", tool_calling="native")


# -- full runs -------------------------------------------------------------------------------


def test_the_library_question_through_chat_completions(key_env):
    with ModelServer(*(openai_text(step) for step in GOOD_STEPS)) as server:
        trace = run_plan(plan_text(server.url + "/v1", api_key_env=key_env, temperature=0, max_tokens=256))
    assert (trace.outcome.status, trace.answer, len(trace.steps)) == ("answered", "2", 4)
    assert [request.path for request in server.requests] == ["/v1/chat/completions"] * 4
    first, last = server.requests[0], server.requests[-1]
    assert first.headers["authorization"] == f"Bearer {KEY}"
    body = first.body
    assert (body["model"], body["temperature"], body["max_tokens"], body["stop"]) == ("test-model", 0, 256, ["\nObservation:"])
    system, user = body["messages"]
    assert system["role"] == "system" and "- catalog(title: str): Total copies of a title in the catalogue." in system["content"]
    assert user == {"role": "user", "content": f"Question: {QUESTION}"}
    # The transcript so far is the user message: every step and its observation.
    assert last.body["messages"][1]["content"] == "\n".join([
        f"Question: {QUESTION}",
        GOOD_STEPS[0], "Observation: 5",
        GOOD_STEPS[1], "Observation: 3",
        GOOD_STEPS[2], "Observation: 2",
    ])
    assert last.body["messages"][0] == system  # the same system prompt every call
    start = trace.events[0]
    assert start.policy == f"openai chat completions: model test-model at {server.url}/v1 (bracket format, key from ${key_env})"
    assert start.guards["token_estimator"] == "usage reported by the model, else estimate_tokens"


def test_the_library_question_through_anthropic_messages_with_native_tool_use(key_env):
    replies = [
        anthropic_tool_use("catalog", {"title": "Il Gattopardo"}, text="I need the total copies."),
        anthropic_tool_use("loans", {"title": "Il Gattopardo"}),
        anthropic_tool_use("calc", {"expression": "5 - 3"}, text="Thought: I subtract."),
        anthropic_text("Thought: I have the number.\nFinal Answer: 2", stop_reason="end_turn"),
    ]
    with ModelServer(*replies) as server:
        trace = run_plan(plan_text(server.url, "anthropic", api_key_env=key_env, tool_calling="native"))
    assert (trace.outcome.status, trace.answer, len(trace.steps)) == ("answered", "2", 4)
    assert [request.path for request in server.requests] == ["/v1/messages"] * 4
    request = server.requests[0]
    assert request.headers["x-api-key"] == KEY and request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    body = request.body
    assert "- calc(expression: str): Arithmetic on numbers." in body["system"]
    assert {"name": "catalog", "description": "Total copies of a title in the catalogue.", "input_schema": {
        "type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"],
        "additionalProperties": False}} in body["tools"]
    assert body["messages"] == [{"role": "user", "content": f"Question: {QUESTION}"}]
    actions = of_type(trace, ev.ActionTaken)
    assert [(a.tool, a.args) for a in actions] == [
        ("catalog", {"title": "Il Gattopardo"}), ("loans", {"title": "Il Gattopardo"}), ("calc", {"expression": "5 - 3"})]
    assert [t.text for t in of_type(trace, ev.Thought)][:1] == ["I need the total copies."]
    transcript = server.requests[-1].body["messages"][0]["content"]
    assert 'Action: calc\nAction Input: {"expression": "5 - 3"}\nObservation: 2' in transcript


def test_the_library_question_through_anthropic_in_the_text_format(key_env):
    with ModelServer(*(anthropic_text(step) for step in GOOD_STEPS)) as server:
        trace = run_plan(plan_text(server.url, "anthropic", api_key_env=key_env))
    assert (trace.answer, len(trace.steps)) == ("2", 4)
    assert server.requests[0].body["stop_sequences"] == ["\nObservation:"]
    assert "tools" not in server.requests[0].body


def test_native_tool_calls_through_chat_completions_and_bad_arguments_recovered_from(key_env):
    replies = [
        openai_tool_call("catalog", '{"title": "Il Gattopardo"'),  # cut-off JSON: a parse error the model sees
        openai_tool_call("catalog", '{"title": "Il Gattopardo"}', content="Thought: the total first."),
        openai_tool_call("loans", '{"title": "Il Gattopardo"}', count=2),
        openai_tool_call("calc", '{"expression": "5 - 3"}'),
        openai_text("Final Answer: 2"),
    ]
    with ModelServer(*replies) as server:
        trace = run_plan(plan_text(server.url + "/v1", api_key_env=key_env, tool_calling="native"))
    assert (trace.answer, len(trace.steps)) == ("2", 5)
    assert trace.steps[0].parse_error.startswith("Action Input is not valid JSON")
    assert "ERROR: Action Input is not valid JSON" in server.requests[1].body["messages"][1]["content"]
    tools = server.requests[0].body["tools"]
    assert tools[0]["type"] == "function" and tools[0]["function"]["parameters"]["properties"] == {"expression": {"type": "string"}}
    assert "stop" not in server.requests[0].body
    notes = [raw.note for raw in of_type(trace, ev.RawRecord) if raw.step == 3]
    assert notes == ["the model asked for 2 tool calls at once; only the first (loans) runs, one action per step"]


def test_a_hallucinated_tool_is_an_observation_the_model_recovers_from(key_env):
    replies = [openai_text("Thought: I search online.\nAction: web_search[Il Gattopardo copies]"),
               *(openai_text(step) for step in GOOD_STEPS)]
    with ModelServer(*replies) as server:
        trace = run_plan(plan_text(server.url + "/v1", api_key_env=key_env))
    assert (trace.outcome.status, trace.answer, len(trace.steps)) == ("answered", "2", 5)
    first = trace.steps[0]
    assert first.error.kind == "unknown_tool"
    assert first.observation == "ERROR: tool 'web_search' does not exist, available: ['calc', 'catalog', 'loans']"
    assert server.requests[1].body["messages"][1]["content"].endswith(f"Observation: {first.observation}")


def test_python_callers_pass_the_policy_to_the_agent_and_the_loop_documents_the_registry():
    registry = ToolRegistry([table_lookup("catalog", {"Il Gattopardo": 5}, param="title"), calculator("calc")])
    with ModelServer(openai_text("Action: catalog[Il Gattopardo]"), openai_text("Final Answer: 5")) as server:
        policy = OpenAIChatPolicy("m", base_url=server.url + "/v1", api_key=KEY)
        trace = ReActAgent(policy, registry, max_steps=3).run("Copies?")
    assert trace.answer == "5"
    assert "- catalog(title: str)" in server.requests[0].body["messages"][0]["content"]
    assert KEY not in repr(policy) and KEY not in policy.describe()


# -- what the trace says about the calls ------------------------------------------------------


def test_the_system_prompt_is_noted_once_in_the_trace(key_env):
    with ModelServer(*(openai_text(step) for step in GOOD_STEPS)) as server:
        trace = run_plan(plan_text(server.url + "/v1", api_key_env=key_env))
    (note,) = of_type(trace, ev.RawRecord)
    assert note.step == 1 and note.source == "policy"
    assert note.note == f"system prompt sent with every call: {len(note.data['system']):,} characters, 3 tools, bracket format"
    assert note.data["system"] == server.requests[0].body["messages"][0]["content"]


def test_the_key_is_in_no_event_and_no_message(key_env):
    leak = openai_error(400, f"key {KEY} is not allowed here", kind="invalid_request_error")
    with ModelServer(openai_text(GOOD_STEPS[0]), leak) as server:
        trace = run_plan(plan_text(server.url + "/v1", api_key_env=key_env))
    assert trace.outcome.status == "policy error"
    assert "key *** is not allowed here" in trace.outcome.message
    assert KEY not in json.dumps([event.to_dict() for event in trace.events])


def test_a_reply_that_writes_its_own_observation_is_cut_there(key_env):
    runaway = "Thought: total.\nAction: catalog[Il Gattopardo]\nObservation: 7\nThought: done\nFinal Answer: 7"
    with ModelServer(openai_text(runaway), openai_text("Final Answer: 5")) as server:
        trace = run_plan(plan_text(server.url + "/v1"))
    assert trace.steps[0].action.name == "catalog" and trace.steps[0].observation == "5"
    notes = [raw for raw in of_type(trace, ev.RawRecord) if "Observation" in raw.note]
    assert notes[0].data == {"dropped": "Observation: 7\nThought: done\nFinal Answer: 7"}
    assert trace.answer == "5"


def test_a_reasoning_models_thinking_is_set_aside(key_env):
    thinking = "<think>\nThe catalog tool gives totals.\n</think>\n\nThought: total.\nAction: catalog[Il Gattopardo]"
    with ModelServer(openai_text(thinking), openai_text("Final Answer: 5")) as server:
        trace = run_plan(plan_text(server.url + "/v1"))
    assert trace.steps[0].action.name == "catalog"
    assert "<think>" not in server.requests[1].body["messages"][1]["content"]
    assert any(raw.data == {"thinking": "The catalog tool gives totals."} for raw in of_type(trace, ev.RawRecord))


# -- errors are data ---------------------------------------------------------------------------


def policy_error(trace) -> str:
    assert trace.outcome.status == "policy error"
    (error,) = [e for e in of_type(trace, ev.StepError) if e.kind == "policy"]
    assert error.message == trace.outcome.message
    assert trace.events[-1].type == "run_end"
    return error.message


@pytest.mark.parametrize(("reply", "expected"), [
    (openai_error(401, "Incorrect API key provided", kind="invalid_request_error"),
     "ModelCallError: HTTP 401 Unauthorized from {url}/v1/chat/completions: Incorrect API key provided (invalid_request_error)"),
    (Reply("<html>Bad gateway</html>", status=404), "HTTP 404 Not Found from {url}/v1/chat/completions: <html>Bad gateway</html>"),
    (Reply(b"not json at all"), "the reply from {url}/v1/chat/completions is not JSON (JSONDecodeError): not json at all"),
    (Reply(b"[1, 2]"), "is JSON but not an object: [1, 2]"),
    (Reply(b""), "is not JSON (JSONDecodeError): (empty)"),
    (Reply({"object": "chat.completion", "choices": []}), "has no choices"),
    (openai_text(None, finish="length"), "the model's reply holds no text (finish reason: length; raise max_tokens?)"),
    (openai_text("   \n"), "the model's reply holds no text (finish reason: stop)"),
    (Reply({"error": {"message": "model 'x' not found"}}), "answered with an error: model 'x' not found"),
    (Reply("", status=307, headers={"Location": "https://elsewhere.example/v1"}),
     "HTTP 307 Temporary Redirect from {url}/v1/chat/completions: a redirect to https://elsewhere.example/v1, not followed"),
    (Reply(hang_up=True), "{url}/v1/chat/completions broke off the reply (RemoteDisconnected"),
])
def test_each_failed_call_ends_the_run_with_a_policy_error(reply, expected):
    with ModelServer(openai_text(GOOD_STEPS[0]), reply) as server:
        trace = run_plan(plan_text(server.url + "/v1"))
    assert len(trace.steps) == 2 and trace.steps[0].observation == "5"
    assert expected.format(url=server.url) in policy_error(trace)


@pytest.mark.parametrize(("reply", "expected"), [
    (anthropic_error(400, "max_tokens: must be at least 1", kind="invalid_request_error"),
     "HTTP 400 Bad Request from {url}/v1/messages: max_tokens: must be at least 1 (invalid_request_error)"),
    (anthropic_text("", stop_reason="max_tokens"), "the model's reply holds no text (finish reason: max_tokens; raise max_tokens?)"),
    (Reply({"type": "message", "content": "text"}), "has no content"),
    (Reply({"type": "error", "error": {"type": "api_error", "message": "boom"}}), "answered with an error: boom (api_error)"),
])
def test_failed_anthropic_calls_end_the_run_with_a_policy_error(reply, expected):
    with ModelServer(reply) as server:
        trace = run_plan(plan_text(server.url, "anthropic"))
    assert expected.format(url=server.url) in policy_error(trace)


def test_a_refused_connection_is_a_policy_error():
    url = f"http://127.0.0.1:{free_port()}/v1"
    message = policy_error(run_plan(plan_text(url)))
    assert message == f"ModelCallError: cannot connect to {url}/chat/completions: connection refused (is the server running?)"


def test_a_server_slower_than_the_timeout_is_a_policy_error():
    with ModelServer(Reply(openai_text(GOOD_STEPS[0]).body, delay=5)) as server:
        started = time.monotonic()
        trace = run_plan(plan_text(server.url + "/v1", timeout=0.3))
        waited = time.monotonic() - started
    assert "within 0.3 s (timeout)" in policy_error(trace)
    assert waited < 4  # the reply due at 5 s was not waited for
    assert len(server.requests) == 1  # a timeout is not retried


def test_the_timeout_is_capped():
    with pytest.raises(ValueError, match="timeout must be a number more than 0 and at most 300"):
        OpenAIChatPolicy("m", timeout=301)
    with pytest.raises(ValueError, match="retries must be a whole number from 0 to 10"):
        OpenAIChatPolicy("m", retries=11)


def test_respond_alone_raises_model_call_error_for_the_loop_to_record():
    policy = OpenAIChatPolicy("m", base_url=f"http://127.0.0.1:{free_port()}/v1")
    with pytest.raises(ModelCallError, match="connection refused"):
        policy.respond("Question: 1 + 1?")


def test_a_policy_error_in_the_python_api_is_data_too():
    registry = ToolRegistry([calculator("calc")])
    policy = OpenAIChatPolicy("m", base_url=f"http://127.0.0.1:{free_port()}/v1")
    trace = ReActAgent(policy, registry).run("1 + 1?")
    assert trace.outcome.status == "policy error" and "connection refused" in trace.outcome.message


# -- retries -----------------------------------------------------------------------------------


def test_429_and_5xx_are_retried_with_backoff_each_retry_a_note():
    replies = [openai_error(429, "Rate limit reached", headers={"Retry-After": "0"}),
               openai_error(503, "overloaded"), openai_text(GOOD_STEPS[0]), openai_text("Final Answer: 5")]
    with ModelServer(*replies) as server:
        trace = run_plan(plan_text(server.url + "/v1", retries=2, backoff=0.05))
    assert (trace.answer, len(server.requests)) == ("5", 4)
    retries = [raw for raw in of_type(trace, ev.RawRecord) if "retry" in raw.note]
    assert [raw.step for raw in retries] == [1, 1]
    assert retries[0].note == (f"HTTP 429 Too Many Requests from {server.url}/v1/chat/completions; retry 1 of 2 in 0 s: "
                               "Rate limit reached (server_error)")
    assert retries[1].note.startswith("HTTP 503 Service Unavailable") and "retry 2 of 2 in 0.1 s" in retries[1].note
    assert (retries[1].data["status"], retries[1].data["attempt"], retries[1].data["wait"]) == (503, 2, 0.1)
    # The notes sit in the step, before what the reply said.
    step_events = [e.type for e in trace.events if e.step == 1]
    assert step_events[:5] == ["step", "raw", "raw", "raw", "thought"]


def test_retries_are_bounded_and_the_last_status_is_the_error():
    replies = [anthropic_error(529, "Overloaded")] * 5
    with ModelServer(*replies) as server:
        trace = run_plan(plan_text(server.url, "anthropic", retries=1, backoff=0))
    assert len(server.requests) == 2
    assert policy_error(trace) == (f"ModelCallError: HTTP 529 from {server.url}/v1/messages after 2 attempts: "
                                   "Overloaded (overloaded_error)")


def test_a_client_error_is_not_retried():
    with ModelServer(openai_error(400, "bad request"), openai_text("Final Answer: 1")) as server:
        trace = run_plan(plan_text(server.url + "/v1", retries=3, backoff=0))
    assert len(server.requests) == 1 and "HTTP 400" in policy_error(trace)


def test_retry_after_is_honoured_up_to_a_cap():
    replies = [openai_error(429, "slow down", headers={"Retry-After": "3600"}), openai_text("Final Answer: 1")]
    with ModelServer(*replies) as server:
        agent = parse_plan(plan_text(server.url + "/v1", backoff=2), allow_network=True).build_agent()
        waits: list[float] = []
        agent.policy.sleep = lambda seconds: waits.append(seconds) or False
        trace = agent.run(QUESTION)
    assert trace.answer == "1" and waits == [60.0]


# -- tokens ------------------------------------------------------------------------------------


def test_the_token_budget_counts_the_usage_the_server_reports():
    replies = [openai_text(GOOD_STEPS[0], prompt_tokens=900, completion_tokens=20),
               openai_text(GOOD_STEPS[1], prompt_tokens=950, completion_tokens=25)]
    with ModelServer(*replies) as server:
        trace = run_plan(plan_text(server.url + "/v1", guards="max_steps = 8\ntoken_budget = 1500"))
    counters = of_type(trace, ev.GuardCounters)
    assert [c.step_tokens for c in counters] == [920, 975]
    assert counters[-1].tokens == [1895, 1500]
    assert (trace.outcome.status, trace.outcome.guard) == ("token budget exhausted", "token_budget")
    assert trace.steps[1].observation is None  # the step over the budget runs no tool


def test_anthropic_usage_counts_input_output_and_cache_tokens():
    with ModelServer(anthropic_text("Final Answer: 2", input_tokens=300, output_tokens=12, cache_read=1000)) as server:
        trace = run_plan(plan_text(server.url, "anthropic"))
    assert of_type(trace, ev.GuardCounters)[0].step_tokens == 1312


def test_without_usage_in_the_reply_tokens_are_estimated():
    with ModelServer(openai_text("Final Answer: 2", usage=False)) as server:
        trace = run_plan(plan_text(server.url + "/v1"))
    prompt, written = f"Question: {QUESTION}", "Final Answer: 2"
    assert of_type(trace, ev.GuardCounters)[0].step_tokens == (len(prompt) + 3) // 4 + (len(written) + 3) // 4


# -- where the key may go -----------------------------------------------------------------------


def test_a_key_is_never_sent_over_plain_http_to_another_machine():
    with pytest.raises(ValueError, match="refusing to send an API key over plain http to models.example"):
        OpenAIChatPolicy("m", base_url="http://models.example/v1", api_key=KEY)
    OpenAIChatPolicy("m", base_url="http://models.example/v1")  # no key: allowed
    OpenAIChatPolicy("m", base_url="https://models.example/v1", api_key=KEY)
    OpenAIChatPolicy("m", base_url="http://[::1]:8000/v1", api_key=KEY)
    OpenAIChatPolicy("m", base_url="http://models.example/v1", api_key=KEY, allow_plain_http_key=True)


@pytest.mark.parametrize(("host", "loopback"), [
    ("localhost", True), ("127.0.0.1", True), ("127.8.9.1", True), ("[::1]", True), ("LOCALHOST.", True),
    ("localhost.evil.example", False), ("127.0.0.1.nip.io", False), ("10.0.0.1", False), ("0x7f000001", False),
])
def test_only_literal_loopback_hosts_count_as_this_machine(host, loopback):
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(("url", "expected"), [
    ("ftp://models.example", "http:// or https://"),
    ("https://user:secret@models.example/v1", "must not hold a user name or password"),
    ("https://models.example/v1?key=abc", "must not have a query"),
    ("https://models.example:99999/v1", "invalid port"),
    ("localhost:11434", "http:// or https://"),
])
def test_a_base_url_must_be_a_plain_http_address(url, expected):
    with pytest.raises(ValueError, match=expected):
        OpenAIChatPolicy("m", base_url=url)


def test_a_key_variable_that_is_not_set_is_an_error(monkeypatch):
    monkeypatch.delenv("AGENTDBG_TEST_KEY", raising=False)
    with pytest.raises(ValueError, match=r"read from \$AGENTDBG_TEST_KEY, which is not set"):
        AnthropicPolicy("m", api_key_env="AGENTDBG_TEST_KEY")


# -- cancelling --------------------------------------------------------------------------------


def test_cancel_abandons_a_call_in_flight_at_once():
    with ModelServer(Reply(openai_text("Final Answer: 1").body, delay=30)) as server:
        policy = OpenAIChatPolicy("m", base_url=server.url + "/v1")
        run = ReActAgent(policy, ToolRegistry([calculator("calc")])).start("1?")
        threading.Timer(0.3, run.cancel).start()
        started = time.monotonic()
        run.step()
        assert time.monotonic() - started < 10  # not the 30 s the server waits
    assert run.outcome.status == "policy error" and run.outcome.message == "ModelCallError: cancelled"


def test_cancel_cuts_the_wait_before_a_retry():
    with ModelServer(openai_error(503, "busy"), openai_text("Final Answer: 1")) as server:
        policy = OpenAIChatPolicy("m", base_url=server.url + "/v1", backoff=30)
        run = ReActAgent(policy, ToolRegistry([calculator("calc")])).start("1?")
        threading.Timer(0.3, run.cancel).start()
        run.step()
    assert run.outcome.message == "ModelCallError: cancelled while waiting to retry"
