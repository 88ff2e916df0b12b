"""Where a live run's calls to dangerous tools wait for the user.

The engine asks from the worker thread that runs its step (``ApprovalDesk.ask``): the
desk posts ``ApprovalAsked`` to the app and that thread waits; the app shows the dialog
on the UI thread, which never waits, and ``answer`` releases the engine with the
decision. Closing the desk (the app is quitting) denies what is pending, so the worker
ends its step without running the call and no thread is left waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from textual.message import Message

from agentdbg.engine.approval import ApprovalRequest, Decision

CLOSED = Decision.deny("the debugger was closed before a decision", by="agentdbg")


class PendingApproval:
    """One request waiting for its decision."""

    def __init__(self, request: ApprovalRequest):
        self.request = request
        self.decision: Decision | None = None
        self.decided = threading.Event()

    def settle(self, decision: Decision) -> bool:
        """Give the decision; False when one was given already (the first one counts)."""
        if self.decided.is_set():
            return False
        self.decision = decision
        self.decided.set()
        return True


class ApprovalAsked(Message):
    """The engine waits for a decision on ``pending.request``."""

    def __init__(self, pending: PendingApproval) -> None:
        super().__init__()
        self.pending = pending


class ApprovalDesk:
    def __init__(self, post: Callable[[Message], bool]):
        self._post = post
        self._lock = threading.Lock()
        self._closed = False
        self._pending: set[PendingApproval] = set()

    @property
    def waiting(self) -> bool:
        with self._lock:
            return bool(self._pending)

    def ask(self, request: ApprovalRequest) -> Decision:
        """From the engine's thread: the user's decision, once given (or CLOSED)."""
        pending = PendingApproval(request)
        with self._lock:
            if self._closed:
                return CLOSED
            self._pending.add(pending)
        try:
            if not self._post(ApprovalAsked(pending)):  # the app is gone
                pending.settle(CLOSED)
            pending.decided.wait()
        finally:
            with self._lock:
                self._pending.discard(pending)
        return pending.decision or CLOSED

    def answer(self, pending: PendingApproval, decision: Decision) -> bool:
        """From the UI thread: release the engine with ``decision``."""
        return pending.settle(decision)

    def close(self) -> None:
        """Deny whatever is pending, and every later request, without asking."""
        with self._lock:
            self._closed = True
            pending = list(self._pending)
        for waiting in pending:
            waiting.settle(CLOSED)
