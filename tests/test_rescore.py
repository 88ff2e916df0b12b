"""Re-scoring a recorded run under other guards (agentdbg.debugger.rescore): the fold over
its steps is the engine's own guard arithmetic, so a run re-scored with settings X stops
exactly where the engine, given X, stops the same policy."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import SAMPLE_PLANS

from agentdbg.debugger.rescore import (
    Fold,
    GuardSettings,
    Totals,
    rescore_records,
    rescore_run,
    step_tokens,
)
from agentdbg.engine import events as ev
from agentdbg.importers.builder import RunBuilder
from agentdbg.plans import load_plan
from agentdbg.runs import EventRun

CORRECT = {"correct": True, "score": 1, "expected": "2", "grader": "em"}
WRONG = {"correct": False, "score": 0, "expected": "2", "grader": "em"}


def built(steps: list[dict], verdict: dict | None = None, **build) -> EventRun:
    """A run imported from ``steps`` (RunBuilder.step fields), ended by ``build``."""
    builder = RunBuilder("task", name="run")
    for fields in steps:
        builder.step(**fields)
    return EventRun(builder.build(verdict=verdict, **build))


def act(tool: str = "search", arg: str = "x", **more) -> dict:
    return {"tool": tool, "args": arg, "call": f"{tool}[{arg}]", "observation": "seen", **more}


def one(run: EventRun, **settings):
    return rescore_run(run, [GuardSettings(**settings)])[0]


# -- each guard ---------------------------------------------------------------------------

def test_the_step_budget_stops_after_the_nth_action_and_accepts_an_answer_at_it():
    run = built([act(arg=str(n)) for n in range(5)] + [{"answer": "2"}], CORRECT)
    cut = one(run, max_steps=3)
    assert (cut.stop.step, cut.stop.guard, cut.stop.before_action) == (3, "max_steps", False)
    assert cut.stop.message == "step budget exhausted: 3 steps used"
    assert (cut.effect, cut.steps_saved) == ("false_stop", 3)
    assert one(run, max_steps=5).steps_saved == 1
    through = one(run, max_steps=6)  # the answer comes at step 6: the engine accepts it
    assert (through.stop, through.effect, through.steps_saved) == (None, "let_through", 0)


def test_the_strict_brake_stops_at_any_earlier_action_the_consecutive_one_only_in_a_row():
    run = built([act(arg="a"), act(arg="b"), act(arg="a"), act(arg="b"), act(arg="a"), {"answer": "no"}], WRONG)
    strict = one(run, repeat=2)
    assert (strict.stop.step, strict.stop.guard, strict.stop.before_action) == (3, "repetition", True)
    assert strict.stop.message == "action repeated again: search[a]"
    assert strict.effect == "good_stop" and strict.steps_saved == 3
    assert one(run, repeat=3).stop.step == 5  # the third time "a" comes back
    assert one(run, repeat=2, consecutive=True).effect == "let_through"  # never twice in a row
    in_a_row = built([act(arg="a"), act(arg="b"), act(arg="b"), act(arg="b"), {"answer": "no"}], WRONG)
    assert one(in_a_row, repeat=2, consecutive=True).stop.step == 3
    consecutive = one(in_a_row, consecutive=True)  # the engine's default threshold: 3
    assert consecutive.stop.step == 4
    assert consecutive.stop.message == "action repeated 3 times in a row: search[b]"


def test_the_same_unreadable_output_again_is_a_repeat():
    bad = {"parse_error": "no action", "output": "I think so\n", "observation": "ERROR: no action",
           "observation_error": True}
    run = built([bad, act(), dict(bad, output="  I think so")], None)
    result = one(run, repeat=2)
    assert result.stop.step == 3  # the same output, surrounding whitespace aside
    assert result.stop.message == "action repeated again: I think so"


def test_the_error_budget_counts_error_observations_in_a_row():
    error = act(observation="ERROR: boom", observation_error=True)
    run = built([error, error, act(arg="ok"), error, error, error, {"answer": "2"}], CORRECT)
    assert one(run, max_errors=3).stop.step == 6
    assert one(run, max_errors=3).stop.message == "error budget exhausted: 3 errors in a row"
    assert one(run, max_errors=2).stop.step == 2
    assert one(run, max_errors=4).effect == "let_through"


def test_the_token_budget_counts_the_step_that_crosses_it_and_refuses_its_action_or_answer():
    run = built([act(arg=str(n), tokens=100) for n in range(4)] + [{"answer": "2", "tokens": 100}], CORRECT)
    result = one(run, token_budget=250)
    assert (result.stop.step, result.stop.guard, result.stop.before_action) == (3, "token_budget", True)
    assert result.stop.message == "token budget exhausted: 300 > 250 tokens"
    assert (result.tokens, result.tokens_saved, result.steps_saved) == (500, 200, 2)
    refused = one(run, token_budget=450)  # only the answer's step crosses it: the answer is refused
    assert (refused.stop.step, refused.effect, refused.steps_saved, refused.tokens_saved) == (5, "false_stop", 0, 0)
    assert "the answer refused" in refused.explain()
    assert one(run, token_budget=500).effect == "let_through"


def test_a_run_wide_token_figure_counts_on_its_last_step():
    run = built([act(arg="a"), act(arg="b"), {"answer": "2"}], CORRECT, total_tokens=900)
    result = one(run, token_budget=500)
    assert (result.tokens, result.stop.step, result.effect) == (900, 3, "false_stop")


def test_several_guards_stop_at_the_first_trip_and_settings_are_folded_in_one_read():
    run = built([act(arg="a"), act(arg="b"), act(arg="a"), act(arg="c"), {"answer": "2"}], WRONG)
    read = []

    def records():
        for step in range(1, run.step_count + 1):
            read.append(step)
            yield run.record(step)

    results = rescore_records(records(), [GuardSettings(repeat=2, max_steps=2), GuardSettings(repeat=2),
                                          GuardSettings(max_steps=4)], run.end)
    assert [(r.stop.step, r.stop.guard) for r in results] == [(2, "max_steps"), (3, "repetition"), (4, "max_steps")]
    assert read == [1, 2, 3, 4, 5]


# -- the engine agrees ------------------------------------------------------------------------

def plan_with_guards(tmp_path: Path, name: str, guards: str) -> Path:
    """A copy of sample plan ``name`` whose [guards] table is ``guards``."""
    text = (SAMPLE_PLANS / name).read_text(encoding="utf-8")
    text, count = re.subn(r"^\[guards\]\n(?:[^\[\n][^\n]*\n|\n)*", f"[guards]\n{guards}\n\n", text, count=1, flags=re.M)
    assert count == 1
    path = tmp_path / f"variant-{name}"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("name", "guards"), [
    ("library_runaway.toml", 'max_steps = 6\nrepeat = "any"'),
    ("library_runaway.toml", 'max_steps = 6\nrepeat = "consecutive"\nrepeat_threshold = 3'),
    ("library_runaway.toml", "max_steps = 4"),
    ("library_hallucinating.toml", "max_steps = 2"),
    ("token_budget_large.toml", "max_steps = 8\ntoken_budget = 300"),
    ("bad_arguments.toml", "max_steps = 8\nmax_consecutive_errors = 2"),
    ("bad_arguments.toml", "max_steps = 8\nmax_consecutive_errors = 1"),
])
def test_a_rescored_run_stops_where_the_engine_stops_with_those_guards(tmp_path, name, guards):
    recorded = load_plan(SAMPLE_PLANS / name).run()
    variant = load_plan(plan_with_guards(tmp_path, name, guards)).run()
    assert variant.outcome.guard is not None, "the variant must be stopped by a guard"
    settings = GuardSettings.of_run(EventRun(variant.events).info.guards)
    result = rescore_run(EventRun(recorded.events), [settings])[0]
    assert result.stop is not None
    assert (result.stop.step, result.stop.guard, result.stop.message, result.stop.outcome) == (
        variant.outcome.steps, variant.outcome.guard, variant.outcome.message, variant.outcome.status)


@pytest.mark.parametrize("name", ["library_good.toml", "library_hallucinating.toml", "library_stuck.toml",
                                  "library_runaway.toml", "library_hostile.toml", "bad_arguments.toml",
                                  "token_budget_small.toml", "token_budget_large.toml", "capital_over_budget.toml"])
def test_a_run_rescored_with_its_own_guards_counts_and_stops_as_recorded(name):
    run = EventRun(load_plan(SAMPLE_PLANS / name).run().events)
    fold = Fold(GuardSettings.of_run(run.info.guards))
    used = 0
    for step in range(1, run.step_count + 1):
        record = run.record(step)
        spent = step_tokens(record, used)
        used += spent
        fold.add(record, spent, used)
        counters = fold.guards.counters(step, spent)
        recorded = record.guards
        assert (counters.repeats, counters.errors, counters.tokens) == (
            recorded.repeats, recorded.errors, recorded.tokens), f"step {step}"
        if fold.stop is not None:
            break
    result = rescore_run(run, [GuardSettings.of_run(run.info.guards)])[0]
    if run.end.guard is not None:
        assert (result.effect, result.stop.step, result.stop.guard) == ("same_stop", run.step_count, run.end.guard)
    else:
        assert result.effect == "let_through"


# -- runs that already tripped, imported runs, runs without verdicts ------------------------------

def test_a_run_its_own_guard_stopped_runs_on_under_looser_guards_and_is_caught_earlier_under_stricter():
    stuck = EventRun(load_plan(SAMPLE_PLANS / "library_stuck.toml").run().events)  # the strict brake, step 2
    assert stuck.end.guard == "repetition"
    looser = one(stuck, max_steps=10)
    assert (looser.stop, looser.effect, looser.steps_saved) == (None, "runs_on", 0)
    assert "would have gone on" in looser.explain()
    same = one(stuck, repeat=2)
    assert (same.effect, same.stop.step, same.steps_saved) == ("same_stop", 2, 0)
    earlier = one(stuck, max_steps=1)
    assert (earlier.effect, earlier.judged, earlier.steps_saved) == ("good_stop", "failed", 1)  # no expected answer


def test_a_run_without_guard_counters_is_folded_from_its_actions():
    events = [ev.RunStart(step=0, task="t", tools=[], guards={}, policy="", name="bare", source="")]
    for step in (1, 2, 3):
        events += [ev.StepStart(step=step), ev.ActionTaken(step=step, tool="search", args={"q": "same"}),
                   ev.Observation(step=step, text="nothing")]
    events.append(ev.RunEnd(step=3, outcome="unfinished", steps=3))
    run = EventRun(events)
    assert all(run.record(step).guards is None for step in (1, 2, 3))
    result = one(run, repeat=2)
    assert (result.stop.step, result.tokens, result.judged, result.effect) == (2, 0, "failed", "good_stop")
    assert result.stop.message == "action repeated again: search({'q': 'same'})"


def test_verdicts_make_a_stop_good_false_or_ungraded():
    steps = [act(arg="a"), act(arg="a"), {"answer": "2"}]
    assert one(built(steps, CORRECT), repeat=2).effect == "false_stop"
    assert one(built(steps, WRONG), repeat=2).effect == "good_stop"
    ungraded = one(built(steps, None), repeat=2)
    assert (ungraded.judged, ungraded.effect) == ("ungraded", "ungraded_stop")
    partial = one(built(steps, {"correct": None, "score": 0.5, "expected": None, "grader": "f1"}), repeat=2)
    assert partial.effect == "ungraded_stop"  # a score is no judgement
    failed = one(built(steps[:2], None, outcome="unfinished"), repeat=2)
    assert (failed.judged, failed.effect) == ("failed", "same_stop")  # it stops at its last step anyway
    longer = one(built(steps[:2] + [act(arg="b")], None, outcome="unfinished"), repeat=2)
    assert (longer.judged, longer.effect, longer.steps_saved) == ("failed", "good_stop", 1)


def test_a_run_without_an_end_is_cut_even_at_its_last_recorded_step():
    events = [event for event in built([act(arg="a"), act(arg="a")]).events() if not isinstance(event, ev.RunEnd)]
    run = EventRun(events)
    assert run.end is None
    result = one(run, repeat=2)
    assert (result.judged, result.effect, result.stop.step, result.steps_saved) == ("ungraded", "ungraded_stop", 2, 0)


def test_a_cancelled_rescore_returns_none():
    run = built([act(arg=str(n)) for n in range(3)])
    assert rescore_run(run, [GuardSettings(repeat=2)], cancelled=lambda: True) is None


# -- settings and totals --------------------------------------------------------------------------

def test_settings_are_judged_by_the_engine_guards():
    with pytest.raises(ValueError, match="repeat threshold must be at least 2, got 1"):
        GuardSettings(repeat=1)
    with pytest.raises(ValueError, match="max_steps must be at least 1"):
        GuardSettings(max_steps=0)
    with pytest.raises(ValueError, match="token budget must be at least 1"):
        GuardSettings(token_budget=-5)
    with pytest.raises(ValueError, match="whole number"):
        GuardSettings(max_errors=True)
    assert GuardSettings(repeat=3, max_steps=5, max_errors=1).describe() == \
        "repeat brake any ×3 · max 5 steps · 1 error in a row"
    assert GuardSettings(consecutive=True).describe() == "repeat brake consecutive ×3"
    assert GuardSettings().describe() == "no guards"
    assert GuardSettings(repeat=2, token_budget=10).to_dict() == {
        "max_steps": None, "repeat": {"mode": "any", "threshold": 2}, "max_consecutive_errors": None,
        "token_budget": 10}


def test_a_runs_own_settings_are_read_from_its_header_and_odd_values_left_off():
    assert GuardSettings.of_run({"max_steps": 6, "repeat": {"mode": "consecutive", "threshold": 4},
                                 "max_consecutive_errors": 3, "token_budget": None}) == \
        GuardSettings(max_steps=6, repeat=4, consecutive=True, max_errors=3)
    assert GuardSettings.of_run({"max_steps": "six", "repeat": "any", "token_budget": True}) == GuardSettings()
    assert GuardSettings.of_run(None) == GuardSettings()


def test_totals_add_up_runs_effects_and_savings():
    totals = Totals()
    steps = [act(arg="a"), act(arg="a", tokens=50), {"answer": "2", "tokens": 25}]
    for verdict in (CORRECT, WRONG, None):
        totals.add(one(built(steps, verdict), repeat=2))
    totals.add(one(built([{"answer": "2"}], CORRECT), repeat=2))
    figures = totals.to_dict()
    assert {k: figures[k] for k in ("runs", "stopped", "good_stops", "false_stops", "ungraded_stops", "let_through",
                                    "correct", "wrong", "ungraded", "steps", "steps_saved", "tokens",
                                    "tokens_saved", "runs_with_tokens")} == {
        "runs": 4, "stopped": 3, "good_stops": 1, "false_stops": 1, "ungraded_stops": 1, "let_through": 1,
        "correct": 2, "wrong": 1, "ungraded": 1, "steps": 10, "steps_saved": 3, "tokens": 225,
        "tokens_saved": 75, "runs_with_tokens": 3}
    assert figures["stopped_by"] == {"repetition": 3}


# -- the ReAct paper's FEVER runs -------------------------------------------------------------------

def test_the_fever_runs_trade_off_for_repeat_thresholds(shared_fixtures):
    from agentdbg.documents import open_document

    document = open_document(shared_fixtures / "react-paper" / "fever_runs_first100.txt")
    settings = [GuardSettings(repeat=k) for k in (2, 3, 4, 5)] + [GuardSettings(max_steps=k) for k in (2, 3, 4)]
    totals = [Totals() for _ in settings]
    try:
        for run in document.runs:
            for total, result in zip(totals, rescore_run(run, settings), strict=True):
                total.add(result)
    finally:
        document.close()
    rows = [(t.stopped, t.effects["good_stop"], t.effects["false_stop"], t.steps_saved) for t in totals]
    assert totals[0].runs == 100 and totals[0].steps == 245
    assert (totals[0].judged["correct"], totals[0].judged["wrong"]) == (52, 48)
    assert rows == [(2, 2, 0, 5), (2, 2, 0, 3), (1, 1, 0, 1), (0, 0, 0, 0),  # repeat 2..5
                    (28, 18, 10, 45), (10, 6, 4, 17), (4, 3, 1, 7)]  # max-steps 2..4
