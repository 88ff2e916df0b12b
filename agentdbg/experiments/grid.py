"""The grid experiment: the reactive, memory and planner agents on many random grids.

Every episode is a real run of the engine: a ``GridWorld`` whose moves are tools, a
``GridPolicy`` that reads the views in its prompt, and the step budget as the move limit
(``max_steps = limit``: a run that has not answered after ``limit`` steps is stopped). An
agent arrives when its run answers on the goal; its length is the moves it made. With the
defaults (seed 7, 200 grids of 8x8 at density 0.28, limit 200) the table is the worked
example's (``agentdbg.examples.grid``), line for line.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from agentdbg.engine.agent import ReActAgent, Trace
from agentdbg.engine.grid import Grid, GridWorld, grid_task, random_grids
from agentdbg.engine.grid_policies import GridPolicy
from agentdbg.engine.tools import ToolRegistry

AGENTS = ("reactive", "memory", "planner")
LABELS = {"reactive": "reactive", "memory": "with memory", "planner": "planner"}
TASK = "Walk from S to G."
MAX_EPISODES = 10_000
MAX_LIMIT = 10_000


def run_episode(grid: Grid, agent: str, limit: int) -> tuple[GridWorld, Trace]:
    """One walk: the world after it, and the run's trace."""
    world = GridWorld(grid)
    # Grid moves are pure and instant: run them in the loop's thread, without a time limit.
    registry = ToolRegistry(world.tools(), default_timeout=None)
    runner = ReActAgent(GridPolicy(agent), registry, max_steps=limit, task_label="Task", name=f"grid-{agent}")
    return world, runner.run(grid_task(world, TASK))


def moves_if_arrived(world: GridWorld, trace: Trace) -> int | None:
    """The moves of a walk that answered on the goal; None for one that did not arrive."""
    return world.moves if trace.outcome.status == "answered" and world.arrived else None


def dijkstra_length(grid: Grid) -> int | None:
    """The shortest length again, by another algorithm: the check on breadth-first search."""
    heap, best = [(0, grid.start)], {grid.start: 0}
    while heap:
        d, p = heapq.heappop(heap)
        if p == grid.goal:
            return d
        if d > best[p]:
            continue
        for _, q in grid.neighbours(p):
            if d + 1 < best.get(q, 10**9):
                best[q] = d + 1
                heapq.heappush(heap, (d + 1, q))
    return None


@dataclass
class GridExperiment:
    seed: int
    size: int
    density: float
    limit: int
    optimal: list[int] = field(default_factory=list)
    outcomes: dict[str, list[int | None]] = field(default_factory=dict)  # moves per episode, None: not arrived
    problems: list[str] = field(default_factory=list)  # checks that failed

    @property
    def episodes(self) -> int:
        return len(self.optimal)

    def arrived(self, agent: str) -> int:
        return sum(moves is not None for moves in self.outcomes[agent])

    def mean_extra(self, agent: str) -> float | None:
        """Mean moves over the minimum, over the episodes the agent arrived in."""
        extra = [moves - best for moves, best in zip(self.outcomes[agent], self.optimal, strict=True) if moves is not None]
        return sum(extra) / len(extra) if extra else None

    def mean_length(self, agent: str) -> float | None:
        lengths = [moves for moves in self.outcomes[agent] if moves is not None]
        return sum(lengths) / len(lengths) if lengths else None

    def table(self) -> list[str]:
        """The worked example's three lines (its ``/200`` is the number of episodes)."""
        n = self.episodes
        lines = []
        for agent in ("reactive", "memory"):
            extra = self.mean_extra(agent)
            shown = "n/a" if extra is None else f"{extra:.1f}"
            lines.append(f"{LABELS[agent]:12s} arrives in {self.arrived(agent):3d}/{n}, "
                         f"extra steps over the minimum (mean over the successes): {shown}")
        length = self.mean_length("planner")
        lines.append(f"planner: {self.arrived('planner')}/{n}, mean length "
                     f"{'n/a' if length is None else f'{length:.1f}'} "
                     f"(minimum {2 * (self.size - 1)} for N={self.size})")
        return lines

    def to_dict(self) -> dict:
        return {
            "experiment": "grid",
            "seed": self.seed, "episodes": self.episodes, "size": self.size, "density": self.density,
            "limit": self.limit,
            "agents": {agent: {"arrived": self.arrived(agent), "mean_extra": self.mean_extra(agent),
                               "mean_length": self.mean_length(agent)} for agent in AGENTS},
            "table": self.table(),
            "checks": {"passed": not self.problems, "problems": self.problems},
            "runs": [{"episode": i + 1, "optimal": best, **{agent: self.outcomes[agent][i] for agent in AGENTS}}
                     for i, best in enumerate(self.optimal)],
        }


def run_experiment(seed: int = 7, episodes: int = 200, size: int = 8, density: float = 0.28,
                   limit: int = 200) -> GridExperiment:
    """Draw ``episodes`` grids from ``random.Random(seed)`` and walk each with the three
    agents. The checks of the worked example are made and any failure is listed in
    ``problems``: breadth-first and Dijkstra lengths agree, no agent beats the minimum,
    and the planner walks exactly the minimum."""
    if not 1 <= episodes <= MAX_EPISODES:
        raise ValueError(f"episodes must be 1 to {MAX_EPISODES:,}, got {episodes}")
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be 1 to {MAX_LIMIT:,} moves, got {limit}")
    grids = random_grids(seed, episodes, size, density)
    result = GridExperiment(seed, size, density, limit)
    for number, grid in enumerate(grids, 1):
        best = grid.shortest_length()
        if best != dijkstra_length(grid):
            result.problems.append(f"episode {number}: breadth-first search says {best}, Dijkstra "
                                   f"{dijkstra_length(grid)}")
        result.optimal.append(best)
    for agent in AGENTS:
        result.outcomes[agent] = [moves_if_arrived(*run_episode(grid, agent, limit)) for grid in grids]
        for number, (moves, best) in enumerate(zip(result.outcomes[agent], result.optimal, strict=True), 1):
            if moves is not None and moves < best:
                result.problems.append(f"episode {number}: the {agent} agent took {moves} moves, "
                                       f"fewer than the minimum {best}")
            if agent == "planner" and moves != best:
                result.problems.append(f"episode {number}: the planner took {moves} moves, the minimum is {best}")
    return result
