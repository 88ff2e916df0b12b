"""Plans with memory and rule policies: loading, errors, the sample runs and their replay."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentdbg.documents import open_document
from agentdbg.engine import events as ev
from agentdbg.engine.agent import ReActAgent
from agentdbg.engine.memory import TieredMemory, replay_semantic_texts
from agentdbg.engine.mock_tools import calculator
from agentdbg.engine.policies import NoRuleMatched, Rule, RulePolicy
from agentdbg.engine.tools import ToolRegistry
from agentdbg.plans import PlanError, load_plan, parse_plan
from agentdbg.state import group_run

ROOT = Path(__file__).resolve().parents[1]
PLANS = ROOT / "sample_plans"
RESEARCH = PLANS / "memory_research.toml"
BRERA_TURN = (
    "Thought: Start with the oldest candidate, the Brera Observatory in Milan.\n"
    "Action: search[Brera Observatory]\n"
    "Observation: The Brera Observatory in Milan was founded in 1764 by the Jesuits of the Brera college."
)

# --- the rule policy ------------------------------------------------------------------------


def test_the_first_matching_rule_answers_with_its_groups_filled_in():
    policy = RulePolicy([
        Rule.build("Final Answer: {2} then {1} ({0})", when=r"(\d+)-(\d+)"),
        Rule.build("Thought: nothing yet\nAction: calc[1 + 1]"),
    ])
    assert policy.respond("no numbers") == "Thought: nothing yet\nAction: calc[1 + 1]"
    assert policy.respond("range 3-7 here") == "Final Answer: 7 then 3 (3-7)"


def test_a_group_that_did_not_take_part_fills_in_as_empty():
    policy = RulePolicy([Rule.build("[{1}|{2}]", when=r"(a)|(b)")])
    assert policy.respond("b") == "[|b]"


def test_when_is_searched_line_by_line_and_dot_all_is_opt_in():
    policy = RulePolicy([
        Rule.build("A", when=r"^Observation: 5$"),
        Rule.build("B", when=r"(?s)start.*end"),
        Rule.build("C"),
    ])
    assert policy.respond("Thought: x\nObservation: 5\nmore") == "A"
    assert policy.respond("start\nmiddle\nend") == "B"
    assert policy.respond("start end?") == "B"
    assert policy.respond("Observation: 55") == "C"


def test_once_rules_fire_once_and_the_policy_is_exhausted_when_all_have():
    policy = RulePolicy([Rule.build("first", once=True), Rule.build("second", once=True)])
    assert not policy.exhausted
    assert [policy.respond(""), policy.respond("")] == ["first", "second"]
    assert policy.exhausted
    policy.reset()
    assert policy.respond("") == "first"


def test_a_policy_with_a_rule_that_can_fire_again_is_never_exhausted():
    policy = RulePolicy([Rule.build("once", once=True), Rule.build("again", when="x")])
    policy.respond("")
    assert not policy.exhausted
    assert policy.respond("x") == "again"


def test_no_matching_rule_is_a_policy_error_in_the_run():
    policy = RulePolicy([Rule.build("Final Answer: {1}", when=r"Observation: (\d+)"),
                         Rule.build("Action: calc[2 + 2]", once=True)])
    assert policy.respond("Question") == "Action: calc[2 + 2]"
    with pytest.raises(NoRuleMatched, match="no rule matched"):
        policy.respond("Question")
    policy.reset()
    trace = ReActAgent(policy, ToolRegistry([calculator()])).run("sum")
    assert trace.outcome.status == "answered" and trace.outcome.answer == "4"


def test_a_run_whose_rules_stop_matching_ends_with_a_policy_error():
    policy = RulePolicy([Rule.build("Thought: look\nAction: calc[1 + 1]", when="^Question")])
    trace = ReActAgent(policy, ToolRegistry([calculator()]), max_steps=5).run("q")
    # The prompt still starts with the question, so the rule keeps matching: the step budget stops it.
    assert trace.outcome.status == "budget exhausted"
    policy = RulePolicy([Rule.build("Thought: look\nAction: calc[1 + 1]", when=r"\AQuestion: q\Z")])
    trace = ReActAgent(policy, ToolRegistry([calculator()]), max_steps=5).run("q")
    assert trace.outcome.status == "policy error"
    assert trace.outcome.message.startswith("NoRuleMatched: no rule matched the prompt")


@pytest.mark.parametrize(
    ("say", "when", "message"),
    [
        ("x", "(unclosed", "invalid regular expression"),
        ("{2}", "(one)", r"uses \{2\} but the rule has 1 group"),
        ("{1}", None, r"uses \{1\} but the rule has no 'when'"),
        ("{0}", None, "no 'when'"),
    ],
)
def test_bad_rules_are_refused(say, when, message):
    with pytest.raises(ValueError, match=message):
        Rule.build(say, when)


def test_rule_policy_needs_rules_and_a_known_format():
    with pytest.raises(ValueError, match="at least one rule"):
        RulePolicy([])
    with pytest.raises(ValueError):
        RulePolicy([Rule.build("x")], format="nonsense")
    assert RulePolicy([Rule.build("x")] * 3, format="colon").describe() == "rules: 3 rules (colon format)"


# --- plan files: rules and memory -------------------------------------------------------------

HEAD = 'task = "t"\n\n[[tools]]\nname = "calc"\nkind = "calculator"\n\n'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(text, encoding="utf-8")
    return path


RULES = HEAD + '''[policy]
kind = "rules"

[[policy.rules]]
when = 'Observation: (\\d+)'
say = "Final Answer: {1}"

[[policy.rules]]
once = true
say = """Thought: add
Action: calc[20 + 22]"""
'''


def test_a_rules_plan_runs(tmp_path):
    trace = load_plan(write(tmp_path, RULES)).run()
    assert (trace.outcome.status, trace.outcome.answer, trace.outcome.steps) == ("answered", "42", 2)
    assert trace.events[0].policy == "rules: 2 rules (bracket format)"


@pytest.mark.parametrize(
    ("old", "new", "line", "message"),
    [
        ("when = 'Observation: (\\d+)'", "when = 'Observation: (\\d+'", 11,
         r"\[\[policy.rules\]\] #1: invalid regular expression 'Observation: \(\\d\+' at column 14: missing \), unterminated subpattern"),
        ('say = "Final Answer: {1}"', 'say = "Final Answer: {3}"', 12,
         r"\[\[policy.rules\]\] #1: 'say' uses \{3\} but the rule has 1 group"),
        ("once = true", "once = true\nthen = 1", 16, r"\[\[policy.rules\]\] #2: unknown key 'then'"),
        ("once = true", 'once = "yes"', 15, r"\[\[policy.rules\]\] #2: 'once' should be bool, got str"),
        ('say = "Final Answer: {1}"', "", 10, r"\[\[policy.rules\]\] #1: missing 'say'"),
        ('kind = "rules"', 'kind = "rules"\nformat = "plan"', 9, r"\[policy\]: format must be bracket, colon, json or numbered"),
    ],
)
def test_rule_mistakes_say_file_and_line(tmp_path, old, new, line, message):
    path = write(tmp_path, RULES.replace(old, new))
    with pytest.raises(PlanError, match=rf"^{re.escape(str(path))}:{line}: {message}"):
        load_plan(path)


def test_rules_must_be_tables_and_not_empty(tmp_path):
    with pytest.raises(PlanError, match="needs at least one"):
        load_plan(write(tmp_path, HEAD + '[policy]\nkind = "rules"\nrules = []\n'))
    with pytest.raises(PlanError, match="should be a table"):
        load_plan(write(tmp_path, HEAD + '[policy]\nkind = "rules"\nrules = ["x"]\n'))


MEMORY = RULES.replace("[policy]", "[memory]\nmax_turns = 2\n\n[policy]")


def test_memory_settings_reach_the_run_header(tmp_path):
    text = RULES.replace("[policy]", '[memory]\nmax_turns = 2\nsummary = "truncate"\nsummary_max_chars = 90\n'
                         'recall_k = 3\nrecall_query = "task"\nmin_score = 0.25\nembedding_dim = 64\n\n[policy]')
    trace = load_plan(write(tmp_path, text)).run()
    assert trace.events[0].memory == {
        "kind": "tiered",
        "max_turns": 2,
        "summary": {"summarizer": "truncate", "max_chars": 90},
        "semantic": {"embedder": "hashed-bag-of-words-64", "k": 3, "min_score": 0.25, "query": "task"},
    }


def test_memory_defaults(tmp_path):
    trace = load_plan(write(tmp_path, RULES.replace("[policy]", "[memory]\n\n[policy]"))).run()
    assert trace.events[0].memory == {
        "kind": "tiered",
        "max_turns": 4,
        "summary": {"summarizer": "extractive", "max_chars": 400},
        "semantic": {"embedder": "hashed-bag-of-words-256", "k": 2, "min_score": 0.0, "query": "last_turn"},
    }
    off = load_plan(write(tmp_path, RULES.replace("[policy]", '[memory]\nsummary = "off"\nrecall_k = 0\n\n[policy]')))
    assert off.run().events[0].memory["summary"] is None
    assert off.run().events[0].memory["semantic"] is None


@pytest.mark.parametrize(
    ("setting", "line", "message"),
    [
        ("max_turns = 0", 5, "max_turns must be at least 1, got 0"),
        ('max_turns = "3"', 5, "'max_turns' should be int, got str"),
        ("recall_k = -1", 4, "recall_k must be at least 0"),
        ('summary = "abstractive"', 5, "summary must be extractive, truncate or off"),
        ("summary_max_chars = 0", 5, "summary_max_chars must be at least 1"),
        ('recall_query = "everything"', 5, "recall_query must be one of last_turn, task, task_and_last_turn"),
        ("min_score = 3", 5, "min_score must be between -1 and 1"),
        ("embedding_dim = 0", 5, "embedding_dim must be at least 1"),
        ("embedding_dim = 100000", 5, "embedding_dim must be at most 4096"),
        ("min_score = nan", 5, "min_score must be between -1 and 1"),
        ("buffer = 3", 5, "unknown key 'buffer'; known: embedding_dim, index, max_turns"),
    ],
)
def test_memory_mistakes_say_file_and_line(tmp_path, setting, line, message):
    # [memory] on line 3, recall_k on line 4 (replaced when the setting is recall_k), the setting on 5
    text = HEAD.replace('task = "t"\n', 'task = "t"\n\n[memory]\nrecall_k = 2\n' + setting + "\n")
    if setting.startswith("recall_k"):
        text = text.replace("recall_k = 2\n", "")
    text += '[policy]\nkind = "rules"\n\n[[policy.rules]]\nsay = "Final Answer: x"\n'
    path = write(tmp_path, text)
    with pytest.raises(PlanError, match=rf"^{re.escape(str(path))}:{line}: \[memory\]: {message}"):
        load_plan(path)


def test_every_run_of_a_plan_gets_a_fresh_memory_and_the_same_events():
    plan = load_plan(RESEARCH)
    first, second = plan.start(), plan.start()
    assert first.agent.memory is not second.agent.memory
    a = [e.to_dict() for e in plan.run().events]
    b = [e.to_dict() for e in plan.run().events]
    assert a == b


# --- the long research run -------------------------------------------------------------------


def test_research_run_answers_from_a_recalled_fact():
    trace = load_plan(RESEARCH).run()
    assert (trace.outcome.status, trace.outcome.answer, trace.outcome.steps) == ("answered", "108 years", 15)
    assert trace.steps[13].action.call == "calc[1872 - 1764]"


def test_research_run_exercises_every_tier():
    run = group_run(load_plan(RESEARCH).run().events)
    assert run.step_count >= 15
    states = list(run.states())
    assert any(state.memory.evicted for state in states)
    assert sum(state.memory.summary_changed for state in states) >= 5
    # Step 1's fact: evicted at step 4, folded into the summary, dropped from it later ...
    assert states[4].memory.evicted == (BRERA_TURN,)
    assert "founded in 1764" in states[4].memory.summary
    step14 = states[14].memory
    assert "1764" not in step14.summary and BRERA_TURN not in step14.buffer
    # ... and brought back by semantic recall at step 14, where it is used.
    assert step14.recalled[0]["text"] == BRERA_TURN
    assert run.records[13].call == "calc[1872 - 1764]"


def test_research_run_without_recall_cannot_answer():
    text = RESEARCH.read_text(encoding="utf-8").replace("recall_k = 2", "recall_k = 0")
    trace = parse_plan(text).run()
    assert (trace.outcome.status, trace.outcome.answer) == ("answered", "unknown")
    assert not any(isinstance(e, ev.MemoryRecall) for e in trace.events)


def test_every_tier_at_every_step_rebuilds_from_the_events_alone():
    agent_run = load_plan(RESEARCH).start()
    memory = agent_run.agent.memory
    assert isinstance(memory, TieredMemory)
    compared = 0
    while not agent_run.done:
        agent_run.step()
        # Only what a trace file would hold: the events, written out and read back.
        lines = [json.dumps(e.to_dict()) for e in agent_run.events]
        events = [ev.event_from_dict(json.loads(line)) for line in lines]
        run = group_run(events)
        step = run.step_count
        assert step == agent_run.step_count
        state = list(run.states())[step].memory
        live = memory.tiers()
        assert list(state.buffer) == live["buffer"], f"buffer at step {step}"
        assert state.summary == live["summary"], f"summary at step {step}"
        assert state.semantic_size == len(live["semantic"]), f"semantic size at step {step}"
        assert replay_semantic_texts(events) == live["semantic"], f"semantic texts at step {step}"
        assert list(state.recalled) == live["recalled"], f"recall at step {step}"
        assert run.state_at(step).memory == state
        compared += 1
    assert compared == 15


def test_the_debugger_sees_memory_change_step_by_step():
    document = open_document(RESEARCH)
    run = document.runs[0]
    run.advance_to(14)
    assert run.state_at(4).memory.buffer[:2] == run.state_at(3).memory.buffer[1:]
    assert len(run.state_at(3).memory.buffer) == 3
    assert run.state_at(4).memory.evicted == (BRERA_TURN,)
    assert run.state_at(14).memory.recalled[0]["text"] == BRERA_TURN
    assert run.record(14).recalled == run.state_at(14).memory.recalled


# --- the command line --------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("plan", "outcome", "steps", "answer"),
    [
        ("memory_research.toml", "answered", 15, "108 years"),
        ("token_budget_small.toml", "token budget exhausted", 4, None),
        ("token_budget_large.toml", "answered", 6, "2"),
    ],
)
def test_sample_plans_from_the_command_line(plan, outcome, steps, answer):
    done = subprocess.run([sys.executable, "-m", "agentdbg", "stats", "--json", str(PLANS / plan)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    [run] = json.loads(done.stdout)["runs"]
    assert (run["outcome"], run["steps"], run["answer"]) == (outcome, steps, answer)
