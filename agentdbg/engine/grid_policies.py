"""Three agents for the grid world, as policies that read their prompt.

Each answers from the views of the grid in its prompt (``grid.read_last_status``) and
writes ``Thought:`` / ``Action: move[down from (3, 4)]`` or ``Final Answer:``, like a model
would. Naming the cell it moves from makes a repeated action a real loop: the same move
from the same cell, which the repetition counter and brake then see.

- ``reactive``: sees only the free cells around it, remembers nothing, and steps to the
  one closest to the goal (the first such in right, down, left, up order);
- ``memory``: the same local view, but it remembers every cell it has been on (read
  from all the views in its prompt) and, when no new cell is around, goes back the way
  it came (a depth-first search);
- ``planner``: reads the whole map drawn in its prompt and follows a shortest path
  found by breadth-first search.

They reproduce the worked example's three agents move for move (``agentdbg.examples.grid``).
"""

from __future__ import annotations

from itertools import pairwise

from agentdbg.engine.grid import MOVES, Cell, Status, read_last_status, read_map, read_positions
from agentdbg.engine.policies import Policy

GRID_AGENTS = {
    "reactive": "steps to the free neighbour closest to the goal; no memory",
    "memory": "the same local view, remembers where it has been and backtracks",
    "planner": "reads the whole map and follows a shortest path (breadth-first search)",
}
_ORDER = {name: index for index, (name, _) in enumerate(MOVES)}
_DIRECTION = {delta: name for name, delta in MOVES}


class GridPolicy(Policy):
    """One of ``GRID_AGENTS``, answering in the bracket format. Stateless: each answer is a
    function of the prompt alone, so a run replays exactly."""

    kind = "grid"
    format = "bracket"

    def __init__(self, agent: str):
        if agent not in GRID_AGENTS:
            raise ValueError(f"unknown grid agent {agent!r}; use one of {', '.join(GRID_AGENTS)}")
        self.agent = agent

    def describe(self) -> str:
        return f"grid agent {self.agent}: {GRID_AGENTS[self.agent]} (bracket format)"

    def respond(self, prompt: str) -> str:
        status = read_last_status(prompt)
        if status is None:
            raise ValueError("no view of the grid in the prompt (a line 'at (row, column) after N moves; free: ...'): "
                             "a grid agent walks a [grid] world")
        if status.arrived:
            return f"Thought: I am on the goal.\nFinal Answer: reached the goal {_cell(status.goal)} in {_moves(status.moves)}"
        reply: str = getattr(self, f"_{self.agent}")(prompt, status)
        return reply

    def _reactive(self, prompt: str, status: Status) -> str:
        free = _in_move_order(status.free)
        if not free:
            return f"Thought: No free cell around me.\nFinal Answer: stuck at {_cell(status.position)}"
        name, cell = min(free, key=lambda item: _distance(item[1], status.goal))
        seen = ", ".join(f"{n} {_cell(q)} {_distance(q, status.goal)} to go" for n, q in free)
        return (f"Thought: Free: {seen}. I take the closest to the goal: {name}.\n"
                f"Action: move[{name} from {_cell(status.position)}]")

    def _memory(self, prompt: str, status: Status) -> str:
        path, seen = _remembered_path(read_positions(prompt))
        here = _cell(status.position)
        fresh = sorted((item for item in _in_move_order(status.free) if item[1] not in seen),
                       key=lambda item: _distance(item[1], status.goal))
        if fresh:
            name: str | None = fresh[0][0]
            listed = ", ".join(f"{n} {_cell(q)} {_distance(q, status.goal)} to go" for n, q in fresh)
            return (f"Thought: Around me, not visited yet: {listed}. I have been on {_count(len(seen), 'cell')}. "
                    f"I take the closest to the goal: {name}.\nAction: move[{name} from {here}]")
        if len(path) < 2:
            return ("Thought: Nothing around me I have not visited, and no way back: I have been everywhere I can "
                    f"reach.\nFinal Answer: the goal {_cell(status.goal)} cannot be reached")
        back = path[-2]
        name = _DIRECTION.get((back[0] - status.position[0], back[1] - status.position[1]))
        if name is None:
            raise ValueError(f"the way back leads to {_cell(back)}, which is not next to {here}: "
                             "the prompt does not hold every move")
        return (f"Thought: Nothing around {here} I have not visited: I go back the way I came, to {_cell(back)} "
                f"({_count(len(path) - 2, 'move')} from the start that way).\nAction: move[{name} from {here}]")

    def _planner(self, prompt: str, status: Status) -> str:
        grid = read_map(prompt, status)
        if grid is None:
            raise ValueError(f"no map drawn after the view at {_cell(status.position)}: the planner needs the grid")
        path = grid.shortest_path(status.position)
        if path is None:
            return (f"Thought: On the map, no path leads from {_cell(status.position)} to the goal.\n"
                    f"Final Answer: the goal {_cell(status.goal)} cannot be reached")
        moves = [_DIRECTION[(q[0] - p[0], q[1] - p[1])] for p, q in pairwise(path)]
        return (f"Thought: On the map, a shortest path to the goal (breadth-first search) is {_moves(len(moves))}: "
                f"{', '.join(moves)}.\nAction: move[{moves[0]} from {_cell(status.position)}]")


def _remembered_path(positions: list[Cell]) -> tuple[list[Cell], set[Cell]]:
    """The depth-first walk replayed from the views in the prompt: the path back to where it
    began (the stack) and every cell it has been on. A move to a cell on the path cuts the
    path back to it (a backtrack); a move elsewhere extends it."""
    path: list[Cell] = []
    seen: set[Cell] = set()
    for cell in positions:
        if path and cell == path[-1]:
            continue  # a look, or the same view again
        if cell in seen and cell in path:
            del path[path.index(cell) + 1:]
        else:
            path.append(cell)
        seen.add(cell)
    return path, seen


def _in_move_order(free: tuple[tuple[str, Cell], ...]) -> list[tuple[str, Cell]]:
    return sorted(free, key=lambda item: _ORDER[item[0]])


def _distance(cell: Cell, goal: Cell) -> int:
    return abs(goal[0] - cell[0]) + abs(goal[1] - cell[1])


def _cell(cell: Cell) -> str:
    return f"({cell[0]}, {cell[1]})"


def _count(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _moves(count: int) -> str:
    return _count(count, "move")
