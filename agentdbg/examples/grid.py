"""React or plan: three agents on 200 8x8 grids with obstacles, as plain Python.

The worked example the grid world reproduces (``agentdbg experiment grid`` runs the same
three agents as policies through the engine, move by move). Nothing here uses the engine:
it is the independent reference the experiment's figures are checked against.
"""

from __future__ import annotations

import heapq
import random
from collections import deque

N = 8
MOVES = [(0, 1), (1, 0), (0, -1), (-1, 0)]  # fixed order: determinism


def make_grid(rng):
    while True:
        walls = {(r, c) for r in range(N) for c in range(N)
                 if rng.random() < 0.28} - {(0, 0), (N - 1, N - 1)}
        if bfs(walls) is not None:
            return walls


def neighbors(p, walls):
    for dr, dc in MOVES:
        q = (p[0] + dr, p[1] + dc)
        if 0 <= q[0] < N and 0 <= q[1] < N and q not in walls:
            yield q


def bfs(walls):
    """Planner with the whole map: minimum length, or None."""
    queue, dist = deque([(0, 0)]), {(0, 0): 0}
    while queue:
        p = queue.popleft()
        if p == (N - 1, N - 1):
            return dist[p]
        for q in neighbors(p, walls):
            if q not in dist:
                dist[q] = dist[p] + 1
                queue.append(q)
    return None


def dijkstra(walls):
    """Second, independent calculation: the same result bfs is expected to give."""
    h, best = [(0, (0, 0))], {(0, 0): 0}
    while h:
        d, p = heapq.heappop(h)
        if p == (N - 1, N - 1):
            return d
        if d > best[p]:
            continue
        for q in neighbors(p, walls):
            if d + 1 < best.get(q, 10**9):
                best[q] = d + 1
                heapq.heappush(h, (d + 1, q))
    return None


def manhattan(p):
    return (N - 1 - p[0]) + (N - 1 - p[1])


def reactive(walls, limit=200):
    """Sees only the free neighbours, no memory: picks the closest to the goal."""
    p = (0, 0)
    for step in range(limit):
        if p == (N - 1, N - 1):
            return step
        p = min(neighbors(p, walls), key=manhattan, default=p)
    return None


def with_memory(walls, limit=200):
    """Same local view, but remembers the cells it has seen and backtracks (DFS)."""
    p, stack, seen, step = (0, 0), [(0, 0)], {(0, 0)}, 0
    while step < limit:
        if p == (N - 1, N - 1):
            return step
        fresh = sorted((q for q in neighbors(p, walls) if q not in seen),
                       key=manhattan)
        if fresh:
            p = fresh[0]
            seen.add(p)
            stack.append(p)
        else:
            stack.pop()
            if not stack:
                return None
            p = stack[-1]
        step += 1
    return None


def sample(seed=7, count=200):
    rng = random.Random(seed)
    return [make_grid(rng) for _ in range(count)]


def table(sample_grids):
    """The example's three printed lines."""
    optimal = [bfs(m) for m in sample_grids]
    assert optimal == [dijkstra(m) for m in sample_grids]
    lines = []
    for name, f in [("reactive", reactive), ("with memory", with_memory)]:
        outcomes = [f(m) for m in sample_grids]
        succeeded = [(e, o) for e, o in zip(outcomes, optimal, strict=True) if e is not None]
        assert all(e >= o for e, o in succeeded)  # nobody beats the minimum
        extra = sum(e - o for e, o in succeeded) / len(succeeded)
        lines.append(f"{name:12s} arrives in {len(succeeded):3d}/200, "
                     f"extra steps over the minimum (mean over the successes): {extra:.1f}")
    lines.append(f"planner: 200/200, mean length {sum(optimal) / 200:.1f} "
                 f"(minimum 14 for N=8)")
    return lines


if __name__ == "__main__":
    print("\n".join(table(sample())))
