"""SWE-agent's real trajectories."""

from __future__ import annotations

import json

import pytest
from test_import_support import convert, counters, tools_called


@pytest.fixture
def swe_dir(shared_fixtures):
    folder = shared_fixtures / "swe-agent"
    if not folder.is_dir():
        pytest.skip(f"{folder} not found")
    return folder


def test_real_trajectory(swe_dir):
    path = swe_dir / "sweagenttestrepo-1c2844.traj"
    data = json.loads(path.read_text(encoding="utf-8"))
    name, result, runs = convert(path)
    assert name == "swe-agent"
    run = runs[0]
    assert run.step_count == len(data["trajectory"]) == 5
    assert [r.call for r in run.records] == [entry["action"] for entry in data["trajectory"]]
    assert [r.observation for r in run.records] == [entry["observation"] for entry in data["trajectory"]]
    assert [r.thought for r in run.records] == [entry["thought"] for entry in data["trajectory"]]
    assert tools_called(run) == ["find_file", "open", "edit", "bash", "submit"]
    assert run.info.name == "SWE-agent__test-repo-i1"
    assert "gpt-4o" in run.info.policy
    assert run.info.task.startswith("SyntaxError: invalid syntax")
    assert len(run.info.tools) == 12 and run.info.tools[0]["name"] == "bash"
    assert run.end.outcome == data["info"]["exit_status"] == "submitted"
    assert run.end.answer == data["info"]["submission"]
    stats = data["info"]["model_stats"]
    assert counters(run, "tokens")[-1] == stats["tokens_sent"] + stats["tokens_received"]
    assert f"{stats['api_calls']} API calls" in run.end.message
    assert result.problems == [] and result.raw_count == 1  # the system prompt, kept whole


def test_the_prompt_view_shows_the_real_system_prompt(swe_dir):
    from agentdbg.model.prompt import SYSTEM_HEADER, prompt_at, source_system_prompt

    path = swe_dir / "sweagenttestrepo-1c2844.traj"
    system = json.loads(path.read_text(encoding="utf-8"))["history"][0]
    assert system["role"] == "system" and len(system["content"]) == 1658
    from agentdbg.importers import convert_file
    from agentdbg.model.runs import EventRun

    run = EventRun(convert_file(path)[1].runs[0])
    assert source_system_prompt(run) == system["content"]
    prompt = prompt_at(run, 2)
    assert prompt.startswith(f"{SYSTEM_HEADER}\n{system['content']}\n")
    assert "Observation: " in prompt  # then the transcript, as before


def test_real_function_calling_history(swe_dir):
    path = swe_dir / "function_calling_simple.traj"
    name, result, runs = convert(path)
    assert name == "swe-agent"
    run = runs[0]
    assert run.step_count == 5
    assert tools_called(run) == ["find_file", "open", "edit", "bash", "submit"]
    assert run.records[0].args == {"file_name": "missing_colon.py"}
    assert all(r.observation is not None for r in run.records)
    assert run.info.task.startswith("SyntaxError: invalid syntax")
    assert run.end.outcome == "submitted" and "diff --git" in run.end.answer
    assert result.problems == [] and result.raw_count == 1  # the system prompt
