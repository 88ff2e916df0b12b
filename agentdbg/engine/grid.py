"""A grid world: an agent walks from a start cell to a goal cell around walls.

Its moves are tools (``move[down]``, ``look[]``); what a move returns is the agent's view:
one status line (where it is, the free cells around it, where the goal is) and the grid
drawn as text. The policies in ``grid_policies`` read that text, nothing else.

``random_grids`` draws grids exactly as the worked example does (``agentdbg.examples.grid``):
the same calls to ``random.Random`` in the same order, so seed 7 gives the same 200 grids.
"""

from __future__ import annotations

import random
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from agentdbg.engine.tools import Tool

# The order neighbours are tried in: fixed, so every run is the same.
MOVES: tuple[tuple[str, tuple[int, int]], ...] = (
    ("right", (0, 1)), ("down", (1, 0)), ("left", (0, -1)), ("up", (-1, 0)),
)
DIRECTIONS = dict(MOVES)
MAX_SIDE = 30  # a drawn row stays within a terminal line
# Random cells drawn looking for solvable grids: this many, plus ten draws a grid asked for.
# A bound on impossible settings (a density at which no grid is solvable), not a hang.
MAX_CELLS_DRAWN = 1_000_000
WALL, FREE, START, GOAL, AGENT, TRAIL = "#", ".", "S", "G", "@", "+"
LEGEND = "legend: # wall, . free, + been there, @ you, S start, G goal"

Cell = tuple[int, int]
# A move as the move tool reads it: a direction, and the cell it starts from if the agent says.
_MOVE = re.compile(r"(right|down|left|up)(?:\s+from\s+\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\))?")


class GridError(ValueError):
    """A grid that cannot be made: says what is wrong."""


@dataclass(frozen=True)
class Grid:
    """The map: its size, its walls, where the walk starts and ends."""

    height: int
    width: int
    walls: frozenset[Cell]
    start: Cell = (0, 0)
    goal: Cell = (-1, -1)  # -1: the bottom-right corner

    def __post_init__(self) -> None:
        if not (1 <= self.height <= MAX_SIDE and 1 <= self.width <= MAX_SIDE):
            raise GridError(f"a grid is 1 to {MAX_SIDE} cells a side, got {self.height}x{self.width}")
        if self.goal == (-1, -1):
            object.__setattr__(self, "goal", (self.height - 1, self.width - 1))
        for name, cell in (("start", self.start), ("goal", self.goal)):
            if not self.inside(cell):
                raise GridError(f"the {name} {cell} is outside the {self.height}x{self.width} grid")
            if cell in self.walls:
                raise GridError(f"the {name} {cell} is a wall")
        if self.start == self.goal:
            raise GridError(f"the start and the goal are the same cell {self.start}")

    @classmethod
    def from_rows(cls, rows: Iterable[str]) -> Grid:
        """A grid drawn as text, one string per row: ``#`` wall, ``.`` free, ``S`` the start
        (default the top-left corner), ``G`` the goal (default the bottom-right corner)."""
        rows = list(rows)
        if not rows:
            raise GridError("a grid needs at least one row")
        width = len(rows[0])
        if len(rows) > MAX_SIDE or width > MAX_SIDE:  # said before reading a huge grid cell by cell
            raise GridError(f"a grid is 1 to {MAX_SIDE} cells a side, got {len(rows)}x{width}")
        walls: set[tuple[int, int]] = set()
        marks: dict[str, list[tuple[int, int]]] = {START: [], GOAL: []}
        for r, row in enumerate(rows):
            if len(row) != width:
                raise GridError(f"row {r + 1} has {len(row)} cells, row 1 has {width}: rows must be the same length")
            for c, cell in enumerate(row):
                if cell == WALL:
                    walls.add((r, c))
                elif cell in marks:
                    marks[cell].append((r, c))
                elif cell != FREE:
                    raise GridError(f"row {r + 1}, column {c + 1}: {cell!r} is not one of # . S G")
        for mark, cells in marks.items():
            if len(cells) > 1:
                raise GridError(f"{len(cells)} cells marked {mark}: at most one")
        start = marks[START][0] if marks[START] else (0, 0)
        goal = marks[GOAL][0] if marks[GOAL] else (len(rows) - 1, width - 1)
        return cls(len(rows), width, frozenset(walls), start, goal)

    def inside(self, cell: Cell) -> bool:
        return 0 <= cell[0] < self.height and 0 <= cell[1] < self.width

    def neighbours(self, cell: Cell) -> tuple[tuple[str, Cell], ...]:
        """The free cells next to ``cell``, in ``MOVES`` order, with their direction."""
        found = self._neighbours.get(cell)
        if found is None:
            found = self._neighbours[cell] = tuple(
                (name, q) for name, (dr, dc) in MOVES
                if self.inside(q := (cell[0] + dr, cell[1] + dc)) and q not in self.walls)
        return found

    @cached_property
    def _neighbours(self) -> dict[Cell, tuple[tuple[str, Cell], ...]]:
        return {}

    def distance_to_goal(self, cell: Cell) -> int:
        """Manhattan distance: what the local agents steer by."""
        return abs(self.goal[0] - cell[0]) + abs(self.goal[1] - cell[1])

    def shortest_path(self, source: Cell | None = None) -> list[Cell] | None:
        """Breadth-first search: the cells from ``source`` (the start) to the goal, both
        included, on a shortest path; None when the goal cannot be reached."""
        source = self.start if source is None else source
        parent: dict[Cell, Cell | None] = {source: None}
        queue = deque([source])
        while queue:
            p = queue.popleft()
            if p == self.goal:
                path = [p]
                while (previous := parent[path[-1]]) is not None:
                    path.append(previous)
                return path[::-1]
            for _, q in self.neighbours(p):
                if q not in parent:
                    parent[q] = p
                    queue.append(q)
        return None

    def shortest_length(self) -> int | None:
        path = self.shortest_path()
        return None if path is None else len(path) - 1

    def rows(self) -> list[str]:
        """The map as ``from_rows`` reads it."""
        marks = {self.start: START, self.goal: GOAL}
        return ["".join(marks.get((r, c), WALL if (r, c) in self.walls else FREE) for c in range(self.width))
                for r in range(self.height)]


def random_grid(rng: random.Random, size: int = 8, density: float = 0.28,
                budget: list[int] | None = None) -> Grid:
    """A solvable ``size`` x ``size`` grid from the top-left to the bottom-right corner: each
    cell a wall with probability ``density`` (one ``rng.random()`` per cell, row by row),
    drawn again until the goal can be reached. ``budget`` (a one-item list) counts down the
    work (the cells drawn, at least 64 a draw), so impossible settings end in a GridError
    instead of looping forever."""
    corners = {(0, 0), (size - 1, size - 1)}
    while True:
        if budget is not None:
            budget[0] -= max(size * size, 64)
            if budget[0] < 0:
                raise GridError("drawing grids stopped: the budget of random cells is spent")
        walls = {(r, c) for r in range(size) for c in range(size) if rng.random() < density} - corners
        grid = Grid(size, size, frozenset(walls))
        if grid.shortest_path() is not None:
            return grid


def random_grids(seed: int, count: int, size: int = 8, density: float = 0.28, budget: int | None = None) -> list[Grid]:
    """The first ``count`` grids of ``random.Random(seed)``, as the worked example draws them.
    ``budget``: random cells that may be drawn (default ``MAX_CELLS_DRAWN`` plus ten draws a
    grid); GridError when they are spent first."""
    if not 2 <= size <= MAX_SIDE:
        raise GridError(f"size must be 2 to {MAX_SIDE}, got {size}")
    if not 0 <= density < 1:
        raise GridError(f"density must be at least 0 and below 1, got {density:g}")
    if count < 1:
        raise GridError(f"at least one grid, got {count}")
    rng = random.Random(seed)
    spent = MAX_CELLS_DRAWN + 10 * count * max(size * size, 64) if budget is None else budget
    left = [spent]
    grids: list[Grid] = []
    try:
        while len(grids) < count:
            grids.append(random_grid(rng, size, density, left))
    except GridError:
        why = "no solvable grid found" if not grids else f"only {len(grids):,} solvable grids of the {count:,} found"
        raise GridError(f"{why} within {spent:,} random cells ({size}x{size}, density {density:g}): "
                        "lower the density, the size or the number of grids") from None
    return grids


@dataclass
class GridWorld:
    """One walk on a grid: where the agent is, how many moves it made, where it has been."""

    grid: Grid
    position: Cell = (-1, -1)
    moves: int = 0
    trail: set[Cell] = field(default_factory=set)
    _cells: list[list[str]] = field(init=False, repr=False)  # the drawing, kept up to date move by move

    def __post_init__(self) -> None:
        grid = self.grid
        if self.position == (-1, -1):
            self.position = grid.start
        self._cells = [[WALL if (r, c) in grid.walls else FREE for c in range(grid.width)]
                       for r in range(grid.height)]
        for cell in self.trail:
            self._paint(cell, TRAIL)
        self._paint(grid.start, START)
        self._paint(grid.goal, GOAL)
        self.trail.add(self.position)
        self._paint(self.position, AGENT)

    @property
    def arrived(self) -> bool:
        return self.position == self.grid.goal

    def move(self, direction: str) -> str:
        """Move one cell (``down``, or ``down from (3, 4)``: the cell the agent believes it is
        on, checked); the view from there. A wall, the edge or a wrong ``from`` raises
        ValueError (an error observation) and the agent stays where it is."""
        found = _MOVE.fullmatch(direction.strip().lower()) if len(direction) <= 100 else None
        if found is None:
            raise ValueError(f"cannot read the move {direction[:100]!r}: use right, down, left or up, "
                             "optionally followed by from (row, column)")
        name = found.group(1)
        step = DIRECTIONS[name]
        if found.group(2) is not None:
            believed = (int(found.group(2)), int(found.group(3)))
            if believed != self.position:
                raise ValueError(f"you are at {_cell(self.position)}, not {_cell(believed)}: nothing moved")
        r, c = self.position
        target = (r + step[0], c + step[1])
        if not self.grid.inside(target):
            raise ValueError(f"cannot move {name} from {_cell(self.position)}: the edge of the grid")
        if target in self.grid.walls:
            raise ValueError(f"cannot move {name} from {_cell(self.position)}: a wall at {_cell(target)}")
        left = self.position
        self._paint(left, START if left == self.grid.start else GOAL if left == self.grid.goal else TRAIL)
        self.position = target
        self.moves += 1
        self.trail.add(target)
        self._paint(target, AGENT)
        return self.view()

    def _paint(self, cell: Cell, mark: str) -> None:
        self._cells[cell[0]][cell[1]] = mark

    def view(self) -> str:
        """The status line, then the grid drawn (see ``read_status``)."""
        return self.status() + "\n" + "\n".join(self.drawing())

    def status(self) -> str:
        grid = self.grid
        free = ", ".join(name for name, _ in grid.neighbours(self.position)) or "none"
        where = f"at {_cell(self.position)}" + (", the goal," if self.arrived else "")
        moves = f"{self.moves} move" + ("" if self.moves == 1 else "s")
        return f"{where} after {moves}; free: {free}; goal {_cell(grid.goal)}"

    def drawing(self) -> list[str]:
        """The grid, a row a line: the column numbers (modulo 10) on top, the row numbers
        on the left, cells one space apart so the grid looks square in a terminal."""
        label = len(str(self.grid.height - 1))
        lines = [" " * (label + 1) + " ".join(str(c % 10) for c in range(self.grid.width))]
        lines.extend(f"{r:>{label}} " + " ".join(row) for r, row in enumerate(self._cells))
        return lines

    def tools(self) -> list[Tool]:
        """``move`` (one cell right, down, left or up) and ``look`` (the view, no move)."""
        return [
            Tool("move", "Move one cell: right, down, left or up, followed by from (row, column), the cell "
                 "you are on (checked). Returns where you are, the free cells around you, and the grid "
                 "drawn.", {"direction": str}, self.move),
            Tool("look", "Where you are, the free cells around you, and the grid drawn; does not move.",
                 {}, self.view),
        ]


def grid_task(world: GridWorld, task: str) -> str:
    """The task as a grid agent is given it: the words, the legend, and its first view."""
    return f"{task}\n{LEGEND}\n{world.view()}"


def _cell(cell: Cell) -> str:
    return f"({cell[0]}, {cell[1]})"


# --- reading a view back: what the policies see ------------------------------------------

# A status line starts a line, or follows the "Observation: " label that the loop writes.
STATUS = re.compile(r"at \((\d+), (\d+)\)(, the goal,)? after (\d+) moves?; free: (.*); goal \((\d+), (\d+)\)$", re.M)
_OBSERVATION = "Observation: "
_FREE_CELL = re.compile(r"\b(right|down|left|up)\b")


@dataclass(frozen=True)
class Status:
    """A status line read back: where the agent is, the free cells around it (each with
    its direction, as the line lists them), and the goal."""

    position: Cell
    moves: int
    free: tuple[tuple[str, Cell], ...]
    goal: Cell
    end: int  # where the line ends in the text it was read from

    @property
    def arrived(self) -> bool:
        return self.position == self.goal


def _status(match: re.Match[str]) -> Status:
    r, c = int(match.group(1)), int(match.group(2))
    free = tuple((name, (r + DIRECTIONS[name][0], c + DIRECTIONS[name][1]))
                 for name in dict.fromkeys(_FREE_CELL.findall(match.group(5))))
    return Status((r, c), int(match.group(4)), free, (int(match.group(6)), int(match.group(7))), match.end())


def _starts_line(text: str, at: int) -> bool:
    return at == 0 or text[at - 1] == "\n" or text.endswith(_OBSERVATION, 0, at)


def read_statuses(text: str) -> list[Status]:
    """Every status line in ``text``, in order."""
    return [_status(m) for m in STATUS.finditer(text) if _starts_line(text, m.start())]


_POSITION = re.compile(r"at \((\d+), (\d+)\)(?:, the goal,)? after \d+ moves?; free: .*; goal \(\d+, \d+\)$", re.M)


def read_positions(text: str) -> list[Cell]:
    """Where the agent was in every status line in ``text``, in order (``read_statuses``
    without the rest of each line: the memory agent reads all of them at every step)."""
    return [(int(m.group(1)), int(m.group(2))) for m in _POSITION.finditer(text) if _starts_line(text, m.start())]


def read_last_status(text: str) -> Status | None:
    """The last status line in ``text`` (found from the end: the prompt grows every step)."""
    end = len(text)
    while True:
        at = text.rfind("at (", 0, end)
        if at < 0:
            return None
        if _starts_line(text, at):
            match = STATUS.match(text, at)
            if match is not None:
                return _status(match)
        end = at


def read_map(text: str, status: Status) -> Grid | None:
    """The grid drawn right after ``status`` in ``text``; None when there is no drawing."""
    lines = text[status.end:].split("\n")[1:]
    if not lines or not lines[0].strip():
        return None
    width = len(lines[0].split())
    rows: list[str] = []
    for line in lines[1:]:
        parts = line.split()
        if len(parts) != width + 1 or not parts[0].isdigit() or int(parts[0]) != len(rows):
            break
        rows.append("".join(WALL if cell == WALL else FREE for cell in parts[1:]))
    if not rows:
        return None
    try:
        return Grid(len(rows), width, frozenset((r, c) for r, row in enumerate(rows)
                                                for c, cell in enumerate(row) if cell == WALL),
                    start=status.position, goal=status.goal)
    except GridError:
        return None
