"""The grid world: three agents as policies reproduce the worked example's figures exactly
(reactive 37/200 and 0.0, memory 200/200 and 6.9, planner mean length 14.1), episode by
episode; its sample plans run to their outcomes; plans that get it wrong say where."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from agentdbg.cli import main
from agentdbg.engine.grid import Grid, GridWorld, random_grids, read_last_status, read_map
from agentdbg.engine.grid_policies import GridPolicy
from agentdbg.examples import grid as example
from agentdbg.experiments.grid import run_episode, run_experiment
from agentdbg.plans import PlanError, load_plan, parse_plan

PUBLISHED = [
    "reactive     arrives in  37/200, extra steps over the minimum (mean over the successes): 0.0",
    "with memory  arrives in 200/200, extra steps over the minimum (mean over the successes): 6.9",
    "planner: 200/200, mean length 14.1 (minimum 14 for N=8)",
]


@pytest.fixture(scope="module")
def experiment() -> dict:
    """``agentdbg experiment grid --json`` with the defaults, run once for the module."""
    out = subprocess.run([sys.executable, "-m", "agentdbg", "experiment", "grid", "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


# --- the published figures -----------------------------------------------------------------


def test_the_experiment_prints_the_published_table(experiment):
    assert experiment["table"] == PUBLISHED
    assert experiment["checks"] == {"passed": True, "problems": []}


def test_the_published_figures(experiment):
    agents = experiment["agents"]
    assert (experiment["seed"], experiment["episodes"], experiment["size"], experiment["limit"]) == (7, 200, 8, 200)
    assert agents["reactive"]["arrived"] == 37
    assert round(agents["reactive"]["mean_extra"], 1) == 0.0
    assert agents["memory"]["arrived"] == 200
    assert round(agents["memory"]["mean_extra"], 1) == 6.9
    assert agents["planner"]["arrived"] == 200
    assert round(agents["planner"]["mean_length"], 1) == 14.1
    assert agents["planner"]["mean_extra"] == 0


def test_every_episode_is_the_worked_examples(experiment):
    """Not only the means: each walk has the length the example's functions give."""
    walls = example.sample()
    runs = experiment["runs"]
    assert [run["optimal"] for run in runs] == [example.bfs(w) for w in walls] == [example.dijkstra(w) for w in walls]
    assert [run["reactive"] for run in runs] == [example.reactive(w) for w in walls]
    assert [run["memory"] for run in runs] == [example.with_memory(w) for w in walls]
    assert [run["planner"] for run in runs] == [example.bfs(w) for w in walls]


def test_the_worked_example_itself_prints_the_published_table():
    assert example.table(example.sample()) == PUBLISHED


def test_the_grids_are_drawn_as_the_example_draws_them():
    grids = random_grids(7, 200)
    assert [set(g.walls) for g in grids] == example.sample()
    assert {(g.height, g.width, g.start, g.goal) for g in grids} == {(8, 8, (0, 0), (7, 7))}


def test_the_text_table_is_the_experiments(capsys):
    assert main(["experiment", "grid", "--episodes", "12", "--seed", "3"]) == 0
    assert capsys.readouterr().out.splitlines() == run_experiment(seed=3, episodes=12).table()


@pytest.mark.parametrize(("argv", "message"), [
    (["--density", "0.95", "--episodes", "2"], "no solvable grid found within 1,001,280 random cells (8x8, density 0.95)"),
    (["--density", "nan"], "density must be at least 0 and below 1, got nan"),
    (["--size", "31"], "size must be 2 to 30, got 31"),
    (["--episodes", "0"], "episodes must be 1 to 10,000, got 0"),
    (["--limit", "0"], "limit must be 1 to 10,000 moves, got 0"),
])
def test_settings_out_of_range_exit_2_saying_why(capsys, argv, message):
    assert main(["experiment", "grid", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_failed_check_exits_1_naming_the_episode(capsys, monkeypatch):
    from agentdbg.experiments import grid as experiments

    monkeypatch.setattr(experiments, "dijkstra_length", lambda grid: 0)
    assert main(["experiment", "grid", "--episodes", "2"]) == 1
    assert "check failed: episode 1: breadth-first search says 14, Dijkstra 0" in capsys.readouterr().err


# --- the sample plans ---------------------------------------------------------------------

PLAN_OUTCOMES = {
    "reactive.toml": ("budget exhausted", 200, None, "max_steps"),
    "reactive_braked.toml": ("action repeated", 11, None, "repetition"),
    "memory.toml": ("answered", 35, "reached the goal (7, 7) in 34 moves", None),
    "planner.toml": ("answered", 15, "reached the goal (7, 7) in 14 moves", None),
}


@pytest.mark.parametrize("name", sorted(PLAN_OUTCOMES))
def test_sample_plan_outcomes(sample_plans, name):
    trace = load_plan(sample_plans / "grid" / name).run()
    o = trace.outcome
    assert (o.status, o.steps, o.answer, o.guard) == PLAN_OUTCOMES[name]


def test_every_grid_sample_plan_is_covered(sample_plans):
    assert {p.name for p in (sample_plans / "grid").glob("*.toml")} == set(PLAN_OUTCOMES)


@pytest.mark.parametrize("agent", ["reactive", "memory", "planner"])
def test_a_sample_plan_is_the_experiments_first_episode(sample_plans, agent):
    from_plan = load_plan(sample_plans / "grid" / f"{agent}.toml").run()
    _, from_experiment = run_episode(random_grids(7, 1)[0], agent, 200)
    assert from_plan.transcript == from_experiment.transcript
    assert from_plan.outcome == from_experiment.outcome


def test_grid_plans_are_deterministic_and_need_no_code(sample_plans):
    plan = load_plan(sample_plans / "grid" / "memory.toml", allow_code=False, allow_network=False)
    assert [e.to_dict() for e in plan.run().events] == [e.to_dict() for e in plan.run().events]


def test_the_reactive_loop_is_a_repeat_of_the_same_move_from_the_same_cell(sample_plans):
    trace = load_plan(sample_plans / "grid" / "reactive.toml").run()
    calls = [step.action.call for step in trace.steps]
    assert calls[8:12] == ["move[right from (2, 6)]", "move[left from (2, 7)]"] * 2
    repeats = [e.repeats[0] for e in trace.events if e.type == "guards"]
    assert repeats[:10] == [1] * 10 and repeats[10] == 2  # the first step that moves as before


def test_each_observation_draws_the_grid(sample_plans):
    trace = load_plan(sample_plans / "grid" / "planner.toml").run()
    first = trace.steps[0].observation
    assert first.splitlines() == [
        "at (0, 1) after 1 move; free: down, left; goal (7, 7)",
        "  0 1 2 3 4 5 6 7",
        "0 S @ # . . . . .",
        "1 . . # . # # . .",
        "2 . . . . . . . .",
        "3 . . . . . . . #",
        "4 . . . # # . # #",
        "5 # . . . # . . #",
        "6 . . # . . . . .",
        "7 # . . . # . . G",
    ]
    assert trace.events[0].task.startswith("Walk from S to G.\nlegend: # wall, . free, + been there, @ you, S start, G goal\n"
                                           "at (0, 0) after 0 moves; free: right, down; goal (7, 7)\n")
    last = trace.steps[-2].observation
    assert last.startswith("at (7, 7), the goal, after 14 moves;")
    assert last.count("+") == 13 and "@" in last.splitlines()[-1]


# --- the world and its tools ------------------------------------------------------------------


def test_a_move_into_a_wall_or_off_the_grid_is_an_error_and_moves_nothing():
    world = GridWorld(Grid.from_rows(["S.#", "...", "#.G"]))
    with pytest.raises(ValueError, match=r"cannot move up from \(0, 0\): the edge of the grid"):
        world.move("up")
    world.move("right")
    with pytest.raises(ValueError, match=r"cannot move right from \(0, 1\): a wall at \(0, 2\)"):
        world.move("right")
    with pytest.raises(ValueError, match=r"you are at \(0, 1\), not \(0, 0\): nothing moved"):
        world.move("down from (0, 0)")
    with pytest.raises(ValueError, match="cannot read the move 'north'"):
        world.move("north")
    with pytest.raises(ValueError, match="cannot read the move"):
        world.move("down " * 100_000)
    assert (world.position, world.moves) == ((0, 1), 1)
    world.move("DOWN from (0, 1)")
    assert (world.position, world.moves, world.arrived) == ((1, 1), 2, False)


def test_rows_may_place_the_start_and_the_goal():
    grid = Grid.from_rows(["..G", ".#.", "S.."])
    assert (grid.start, grid.goal, grid.shortest_length()) == ((2, 0), (0, 2), 4)
    assert grid.rows() == ["..G", ".#.", "S.."]


@pytest.mark.parametrize(("rows", "message"), [
    ([], "a grid needs at least one row"),
    (["..", "..."], "row 2 has 3 cells, row 1 has 2"),
    (["S.x"], "row 1, column 3: 'x' is not one of # . S G"),
    (["SS", "G."], "2 cells marked S: at most one"),
    (["#.", ".."], r"the start \(0, 0\) is a wall"),
    (["." * 31], "a grid is 1 to 30 cells a side, got 1x31"),
])
def test_bad_rows_say_what_is_wrong(rows, message):
    with pytest.raises(ValueError, match=message):
        Grid.from_rows(rows)


def test_the_look_tool_takes_no_arguments_and_moves_nothing(tmp_path):
    plan = parse_plan(textwrap.dedent("""\
        task = "Walk from S to G."
        [grid]
        rows = ["S.", ".G"]
        [policy]
        kind = "outputs"
        outputs = ["Action: look[]", "Action: move[right]", "Action: move[down from (0, 0)]", "Action: move[down]"]
    """))
    trace = plan.run()
    looked, moved, wrong, arrived = (step.observation for step in trace.steps)
    assert looked.startswith("at (0, 0) after 0 moves; free: right, down; goal (1, 1)")
    assert moved.startswith("at (0, 1) after 1 move;")
    assert wrong == "ERROR: ValueError: you are at (0, 1), not (0, 0): nothing moved"
    assert arrived.startswith("at (1, 1), the goal, after 2 moves; free: left, up; goal (1, 1)")


# --- the agents on grids the example never draws ------------------------------------------


def walk(rows: list[str], agent: str, max_steps: int = 50):
    text = f'task = "Walk."\n[grid]\nrows = {json.dumps(rows)}\n[guards]\nmax_steps = {max_steps}\n' \
           f'[policy]\nkind = "grid"\nagent = "{agent}"\n'
    return parse_plan(text).run()


@pytest.mark.parametrize(("agent", "steps", "answer"), [
    ("reactive", 1, "stuck at (0, 0)"),
    ("memory", 1, "the goal (2, 2) cannot be reached"),
    ("planner", 1, "the goal (2, 2) cannot be reached"),
])
def test_a_walled_in_start(agent, steps, answer):
    trace = walk(["S#.", "#..", "..G"], agent)
    assert (trace.outcome.status, trace.outcome.steps, trace.answer) == ("answered", steps, answer)


def test_the_memory_agent_explores_all_it_can_reach_before_saying_the_goal_cannot_be_reached():
    trace = walk(["S..#.", ".#.#.", "...#G"], "memory")
    assert trace.answer == "the goal (2, 4) cannot be reached"
    cells = {step.action.call.split(" from ")[1] for step in trace.steps if step.action}
    assert len(cells) == 8  # every cell it can reach, it moved from


def test_the_memory_agent_backtracks_out_of_a_dead_end():
    trace = walk(["S...", "##.#", "...#", ".#..", "...G"], "memory")
    assert trace.outcome.status == "answered"
    assert any("I go back the way I came" in step.thought for step in trace.steps)


def test_a_grid_agent_with_no_view_in_its_prompt_is_a_policy_error():
    with pytest.raises(ValueError, match="no view of the grid in the prompt"):
        GridPolicy("reactive").respond("Question: how many copies?")
    status = read_last_status("Observation: at (0, 1) after 1 move; free: none; goal (1, 1)")
    assert status.position == (0, 1) and read_map("at (0, 1) after 1 move; free: none; goal (1, 1)", status) is None


def test_a_view_quoted_mid_line_is_not_read_as_the_agents():
    prompt = "at (0, 0) after 0 moves; free: right; goal (0, 2)\nThought: it said at (9, 9) after 1 move; " \
             "free: none; goal (9, 9)"
    assert read_last_status(prompt).position == (0, 0)


# --- plans that get the grid wrong ---------------------------------------------------------

GRID_PLAN = 'task = "t"\n{grid}[policy]\nkind = "grid"\nagent = "{agent}"\n'


@pytest.mark.parametrize(("grid", "agent", "message"), [
    ("", "memory", "plan.toml:3: [policy]: a grid agent walks a grid world: add a [grid] table"),
    ("[grid]\nseed = 7\n", "explorer", "plan.toml:6: [policy]: unknown grid agent 'explorer'; use one of reactive, memory, planner"),
    ("[grid]\nseed = 7\nrows = ['S.']\n", "memory", "plan.toml:2: [grid]: give either rows (the grid drawn) or seed (a random grid), not both"),
    ("[grid]\n", "memory", "plan.toml:2: [grid]: give either rows (the grid drawn) or seed (a random grid), not neither"),
    ("[grid]\nseed = 7\nshape = 'square'\n", "memory", "plan.toml:4: [grid]: unknown key 'shape'; known: density, episode, rows, seed, size"),
    ("[grid]\nrows = ['S.', '.x']\n", "memory", "plan.toml:3: [grid]: row 2, column 2: 'x' is not one of # . S G"),
    ("[grid]\nrows = ['S.']\nsize = 3\n", "memory", "plan.toml:4: [grid]: size goes with seed, not with rows"),
    ("[grid]\nseed = 7\nepisode = 0\n", "memory", "plan.toml:4: [grid]: episode must be 1 to 10,000, got 0"),
    ("[grid]\nseed = 7\nsize = 1\n", "memory", "plan.toml:4: [grid]: size must be 2 to 30, got 1"),
    ("[grid]\nseed = 7\ndensity = 0.97\n", "memory", "plan.toml:4: [grid]: no solvable grid found within 1,000,000 random cells (8x8, density 0.97): lower the density"),
    ("[grid]\nseed = 'seven'\n", "memory", "plan.toml:3: [grid]: 'seed' should be int, got str"),
])
def test_grid_mistakes_name_the_file_and_line(tmp_path, grid, agent, message):
    path = tmp_path / "plan.toml"
    path.write_text(GRID_PLAN.format(grid=grid, agent=agent), encoding="utf-8")
    with pytest.raises(PlanError) as raised:
        load_plan(path)
    assert str(raised.value).startswith(f"{tmp_path}/{message}")


def test_a_tool_named_like_the_worlds_is_refused(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text('task = "t"\n[grid]\nseed = 7\n[[tools]]\nname = "move"\nkind = "calculator"\n'
                    '[policy]\nkind = "grid"\nagent = "planner"\n', encoding="utf-8")
    with pytest.raises(PlanError, match=r"plan.toml:5: \[\[tools\]\]: a tool named 'move', which the \[grid\] world"):
        load_plan(path)


def test_the_grid_modules_import_no_ui_libraries():
    code = (
        "import json, sys\n"
        "import agentdbg.engine.grid, agentdbg.engine.grid_policies, agentdbg.experiments.grid, agentdbg.plans\n"
        "agentdbg.plans.load_plan('sample_plans/grid/planner.toml').run()\n"
        "agentdbg.experiments.grid.run_experiment(episodes=2)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))))\n"
    )
    from conftest import ROOT

    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
