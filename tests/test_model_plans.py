"""Plans whose policy calls a model: declared in the plan, allowed by the caller, and never
able to send a key where the user did not see it would go. Errors name file and line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from model_server import ModelServer, openai_text

from agentdbg.cli import main
from agentdbg.plans import PlanError, load_plan, parse_plan

MODELS = Path(__file__).resolve().parents[1] / "sample_plans" / "models"
KEY = "sk-test-0123456789abcdef"

PLAN = """\
task = "What is 6 * 7?"
calls_model = true

[[tools]]
name = "calc"
kind = "calculator"

[policy]
kind = "openai"
model = "test-model"
base_url = "{url}"
"""


def write(tmp_path: Path, text: str, name: str = "plan.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def error_of(text: str, allow_network: bool = True) -> str:
    with pytest.raises(PlanError) as raised:
        parse_plan(text, "plan.toml", allow_network=allow_network)
    return str(raised.value)


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


# -- declared and allowed ----------------------------------------------------------------------


def test_a_model_plan_must_declare_that_it_calls_a_model():
    text = PLAN.format(url="http://localhost:11434/v1").replace("calls_model = true\n", "")
    assert error_of(text) == ("plan.toml:8: [policy]: an openai policy sends the prompts to http://localhost:11434/v1; "
                              "the plan must say calls_model = true")


def test_without_the_callers_opt_in_nothing_is_sent_and_the_error_names_the_server():
    with ModelServer(openai_text("Final Answer: 42")) as server:
        text = PLAN.format(url=server.url + "/v1")
        assert error_of(text, allow_network=False) == (
            f"plan.toml:11: this plan sends its prompts to {server.url}/v1 (openai chat completions, model test-model, "
            "no API key); run it only if you trust that server, with --allow-network")
        assert server.requests == []
        assert parse_plan(text, allow_network=True).run().answer == "42"
        assert len(server.requests) == 1


def test_a_hostile_plan_pointing_the_key_at_another_host_shows_both_before_anything_is_read(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # not even read: the refusal comes first
    text = PLAN.format(url="https://models.attacker.example/v1") + 'api_key_env = "OPENAI_API_KEY"\n'
    message = error_of(text, allow_network=False)
    assert message == ("plan.toml:11: this plan sends its prompts to https://models.attacker.example/v1 "
                       "(openai chat completions, model test-model) with the API key in $OPENAI_API_KEY; "
                       "run it only if you trust that server, with --allow-network")


def test_a_key_is_refused_over_plain_http_to_another_machine_even_when_allowed(keys):
    text = PLAN.format(url="http://models.example:8000/v1") + 'api_key_env = "OPENAI_API_KEY"\n'
    assert error_of(text) == ("plan.toml:11: [policy]: refusing to send the API key in $OPENAI_API_KEY over plain http "
                              "to models.example, which is not this machine: use https, or a loopback address "
                              "(an SSH tunnel to the server, for instance)")
    parse_plan(text.replace("http://models.example:8000", "http://127.0.0.1:8000"), allow_network=True)
    parse_plan(text.replace("http://models.example:8000", "https://models.example:8000"), allow_network=True)


def test_the_key_is_sent_only_with_the_opt_in(keys, capsys, tmp_path):
    with ModelServer(openai_text("Final Answer: 42")) as server:
        path = write(tmp_path, PLAN.format(url=server.url + "/v1") + 'api_key_env = "OPENAI_API_KEY"\n')
        code, _, err = run_cli(capsys, "stats", path)
        assert code == 2 and "--allow-network" in err and server.requests == []
        code, out, err = run_cli(capsys, "stats", path, "--json", "--allow-network")
        assert code == 0, err
        assert json.loads(out)["runs"][0]["answer"] == "42"
        assert [request.headers.get("authorization") for request in server.requests] == [f"Bearer {KEY}"]


# -- mistakes, with file and line --------------------------------------------------------------


@pytest.mark.parametrize(("extra", "expected"), [
    ('api_key = "sk-live-123"', "plan.toml:12: [policy]: a plan never holds an API key; name the environment variable"),
    ('api_kee_env = "X"', "plan.toml:12: [policy]: unknown key 'api_kee_env' for an openai policy; known: api_key_env"),
    ('timeout = 1000', "plan.toml:12: [policy]: timeout must be a number more than 0 and at most 300, got 1000"),
    ('timeout = "60"', "plan.toml:12: [policy]: 'timeout' should be int or float, got str"),
    ('retries = 50', "plan.toml:12: [policy]: retries must be a whole number from 0 to 10, got 50"),
    ('backoff = -1', "plan.toml:12: [policy]: backoff must be a number at least 0 and at most 60, got -1"),
    ('temperature = 3.5', "plan.toml:12: [policy]: temperature must be a number at least 0 and at most 2"),
    ('max_tokens = 0', "plan.toml:12: [policy]: max_tokens must be a whole number of at least 1, got 0"),
    ('format = "numbered"', "plan.toml:12: [policy]: format must be bracket, colon or json, got 'numbered'"),
    ('tool_calling = "magic"', "plan.toml:12: [policy]: tool_calling must be text or native, got 'magic'"),
    ('api_key_env = "OPENAI API KEY"', "plan.toml:12: [policy]: api_key_env must be the name of an environment variable"),
])
def test_each_mistake_in_a_model_policy_says_file_and_line(extra, expected):
    assert error_of(PLAN.format(url="http://localhost:11434/v1") + extra + "\n").startswith(expected)


@pytest.mark.parametrize(("url", "expected"), [
    ("ftp://models.example", "base_url must be an http:// or https:// address with a host"),
    ("https://me:pw@models.example/v1", "base_url must not hold a user name or password"),
    ("https://models.example/v1?key=1", "base_url must not have a query or a fragment"),
])
def test_a_bad_base_url_says_its_line(url, expected):
    assert error_of(PLAN.format(url=url)).startswith(f"plan.toml:11: [policy]: {expected}")


def test_a_missing_model_says_so():
    text = PLAN.format(url="http://localhost:11434/v1").replace('model = "test-model"\n', "")
    assert error_of(text) == "plan.toml:8: [policy]: missing 'model'"


def test_a_key_variable_that_is_not_set_is_named(monkeypatch):
    monkeypatch.delenv("AGENTDBG_UNSET_KEY", raising=False)
    text = PLAN.format(url="http://localhost:11434/v1") + 'api_key_env = "AGENTDBG_UNSET_KEY"\n'
    assert error_of(text) == "plan.toml:12: [policy]: the API key is read from $AGENTDBG_UNSET_KEY, which is not set"


# -- the sample plans --------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "policy"), [
    ("library_openai.toml", "openai chat completions: model gpt-4o-mini at https://api.openai.com/v1 "
                            "(bracket format, key from $OPENAI_API_KEY)"),
    ("library_ollama.toml", "openai chat completions: model llama3.2 at http://localhost:11434/v1 (bracket format)"),
    ("library_anthropic.toml", "anthropic messages: model claude-haiku-4-5 at https://api.anthropic.com "
                               "(json format, native tool calls, key from $ANTHROPIC_API_KEY)"),
])
def test_the_sample_model_plans_need_the_opt_in_and_load_with_it(keys, name, policy):
    with pytest.raises(PlanError, match="--allow-network"):
        load_plan(MODELS / name)
    plan = load_plan(MODELS / name, allow_network=True)
    assert plan.build_agent().policy.describe() == policy


def test_the_ollama_sample_answers_through_a_local_server(tmp_path, capsys):
    steps = ["Thought: the total.\nAction: catalog[Il Gattopardo]", "Thought: on loan.\nAction: loans[Il Gattopardo]",
             "Thought: subtract.\nAction: calc[5 - 3]", "Thought: done.\nFinal Answer: 2"]
    with ModelServer(*(openai_text(step) for step in steps)) as server:
        text = (MODELS / "library_ollama.toml").read_text(encoding="utf-8")
        plan = write(tmp_path, text.replace("http://localhost:11434/v1", server.url + "/v1"), "ollama.toml")
        trace = tmp_path / "ollama.jsonl"
        code, out, err = run_cli(capsys, "record", plan, "-o", trace, "--allow-network")
        assert code == 0, err
        assert "4 steps, answered: 2" in " ".join(out.split())
    code, out, _ = run_cli(capsys, "show", trace)
    assert code == 0 and "system prompt sent with every call" in out
    code, _, _ = run_cli(capsys, "check", trace, "--fail-on", "error,repeat,budget")
    assert code == 0


def test_record_refuses_a_model_plan_without_the_opt_in(tmp_path, capsys):
    code, _, err = run_cli(capsys, "record", MODELS / "library_ollama.toml", "-o", tmp_path / "t.jsonl")
    assert code == 2
    assert "sends its prompts to http://localhost:11434/v1" in " ".join(err.split())
    assert not (tmp_path / "t.jsonl").exists()
