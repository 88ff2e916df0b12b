"""Several tool calls of one turn, dispatched together.

Calls to ordinary tools run concurrently on a small thread pool, each under its own
time limit (``ToolRegistry.dispatch`` already gives every call one), and every failure
comes back as a ToolError, as for a single call. Calls that need the containment
(a dangerous tool waits for a decision; a keyed call writes its ``operation`` before it
runs) go through ``gated_dispatch`` one after another in the loop's thread, in call
order, so approvals are asked one at a time and each intent is on record before its
effect. The results come back in call order, whatever order they finished in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.engine.approval import Approver
from agentdbg.engine.journal import OperationJournal
from agentdbg.engine.operations import GatedCall, gated_dispatch
from agentdbg.engine.parsers import Action
from agentdbg.engine.tools import ToolRegistry

MAX_WORKERS = 8  # threads for one turn's calls; more calls wait for a free one


def needs_containment(registry: ToolRegistry, name: str) -> bool:
    tool = registry.get(name)
    return tool is not None and (tool.dangerous or tool.idempotency_key is not None)


def dispatch_calls(registry: ToolRegistry, actions: Sequence[Action], *, step: int,
                   emit: Callable[[ev.Event], None], approver: Approver | None = None,
                   journal: OperationJournal | None = None, ids: Sequence[str] = ()) -> list[GatedCall]:
    """Run ``actions`` (one turn's calls); their results in the same order. Never raises
    for a tool's failure. ``ids``: the calls' ids, in the same order, for their approvals."""
    results: list[GatedCall | None] = [None] * len(actions)
    plain = [i for i, action in enumerate(actions) if not needs_containment(registry, action.name)]
    futures: dict[int, Future[Any]] = {}
    pool = ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(plain)), thread_name_prefix="calls") if plain else None
    try:
        for i in plain:
            futures[i] = pool.submit(registry.dispatch, actions[i].name, actions[i].args)  # type: ignore[union-attr]
        for i, action in enumerate(actions):
            if i not in futures:
                results[i] = gated_dispatch(registry, action.name, action.args, step=step, emit=emit,
                                            approver=approver, journal=journal, thought=action.thought,
                                            id=ids[i] if i < len(ids) else "")
        for i, future in futures.items():
            results[i] = GatedCall(future.result())
    finally:
        if pool is not None:
            pool.shutdown(wait=False)  # every call has returned (or timed out and been abandoned)
    return [result for result in results if result is not None]
