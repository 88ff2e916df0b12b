"""The steps of a trace file's run that a block test cannot rule out, a block at a time.

Searches, filters, match counts and continues over a trace file read its steps a few MiB
at a time (``StepBlocks.step_blocks``) and decode only the steps that a byte-level test of
each block leaves in (``quick``: a word, a relaxed regex, the automatic breaks). Those
tests are RE2 passes over whole blocks, and RE2 lets other threads run while it reads:
so the next blocks are tested on a few threads while the caller decodes the steps of this
one, and a long scan uses every core without another process.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from agentdbg.debugger.proofs import StepProofs
from agentdbg.model.runs import Advancing, StepBlocks

CANCEL_EVERY = 256  # steps between looks at the cancel flag
MAX_THREADS = 4  # threads testing blocks ahead, at most (one per core)
THREADS_VARIABLE = "AGENTDBG_SCAN_THREADS"  # how many (0 or 1: none, every block tested in turn)

BlockTest = Callable[[Any], set[int]]  # (block) -> the steps of the block that may match

_threads: ThreadPoolExecutor | None = None
_threads_lock = threading.Lock()


def thread_count() -> int:
    """Threads that test blocks ahead: one per core (at most ``MAX_THREADS``), or as
    ``AGENTDBG_SCAN_THREADS`` says."""
    asked = os.environ.get(THREADS_VARIABLE, "").strip()
    if asked.isdigit():
        return min(int(asked), 64)
    return max(1, min(MAX_THREADS, os.cpu_count() or 1))


def _pool() -> ThreadPoolExecutor | None:
    """The shared threads (made when first needed); None when there is one core."""
    global _threads
    count = thread_count()
    if count < 2:
        return None
    with _threads_lock:
        if _threads is None:
            _threads = ThreadPoolExecutor(max_workers=count, thread_name_prefix="agentdbg-scan")
        return _threads


def candidate_steps(run: Any, test: BlockTest, first: int, last: int, *, reverse: bool = False,
                    cancel: threading.Event | None = None, progress: Callable[[int], None] | None = None,
                    proofs: StepProofs | None = None, ahead: bool = False) -> Iterator[int | None]:
    """The steps ``first``..``last`` of ``run`` (from ``last`` down with ``reverse``) that
    ``test`` leaves in, in order; a step too large to be read with the others is always
    in. Yields None and ends when ``cancel`` is set. ``proofs``: what earlier scans of the
    run proved, lent to this one and kept from it. ``ahead``: every block's candidates
    will be read (``StepBlocks.step_blocks``). ``progress(step)`` is told at each block."""
    if last < first:
        return

    def tested(block: Any) -> set[int]:
        if not block.data:  # (no data: its steps are each looked at)
            return set(range(block.first, block.last + 1))
        return test(block) if proofs is None else proofs.test(run, block, test)

    for block, may in _tested_ahead(run.step_blocks(first, last, reverse=reverse, ahead=ahead), tested):
        if cancel is not None and cancel.is_set():
            yield None
            return
        if progress is not None:
            progress(block.last if reverse else block.first)
        for done, step in enumerate(sorted(may, reverse=reverse), 1):
            if done % CANCEL_EVERY == 0 and cancel is not None and cancel.is_set():
                yield None  # (a block may hold thousands of steps to decode)
                return
            yield step


def _tested_ahead(blocks: Iterator[Any], test: BlockTest) -> Iterator[tuple[Any, set[int]]]:
    """``(block, test(block))`` for each block in order, the next few tested meanwhile on
    the shared threads; what is still waiting is dropped when the caller stops early."""
    pool = _pool()
    head = list(itertools.islice(blocks, 2))
    if pool is None or len(head) < 2:  # (one block, a short run: no thread is worth it)
        for block in itertools.chain(head, blocks):
            yield block, test(block)
        return
    depth = thread_count()
    pending: deque[tuple[Any, Future[set[int]]]] = deque()
    try:
        for block in itertools.chain(head, blocks):
            pending.append((block, pool.submit(test, block)))
            if len(pending) > depth:
                done, future = pending.popleft()
                yield done, future.result()
        while pending:
            done, future = pending.popleft()
            yield done, future.result()
    finally:
        for _, future in pending:
            future.cancel()


def prove_ahead(run: Any, proofs: StepProofs, cancel: threading.Event | None = None) -> bool:
    """Prove which steps of ``run`` show only their strings as written (``Block.not_verbatim``)
    and keep the answers in ``proofs``: most of what a first search for a regex without a
    word costs, done before it is asked for (while the search is being typed). False when
    ``cancel`` stopped it; what was proven by then is kept."""
    count = run.step_count
    if not isinstance(run, StepBlocks) or isinstance(run, Advancing) or count == 0:
        return True

    def prove(block: Any) -> set[int]:
        return proofs.test(run, block, lambda block: block.not_verbatim(True)) if block.data else set()

    for _ in _tested_ahead(run.step_blocks(1, count), prove):
        if cancel is not None and cancel.is_set():
            return False
    return True
