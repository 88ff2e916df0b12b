"""The debugger application: panes over a ``DebugSession``, driven by keys, mouse and palette.

The app owns no debugging logic: ``agentdbg.debugger`` moves the cursor and matches
breakpoints, ``agentdbg.model.state`` derives what each pane shows. Anything that may be slow
(a live engine step whose tool may hang, a continue over a long file, a search, opening
or writing a file) runs in a thread worker that never touches widgets: it posts a
message and the handler updates the screen.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events, on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer
from textual.worker import get_current_worker

from agentdbg.debugger.breakpoints import BreakpointSet
from agentdbg.debugger.candidates import prove_ahead
from agentdbg.debugger.find import Query, find_step, literal_reason, matching_steps
from agentdbg.debugger.rescore import GuardSettings, rescore_run
from agentdbg.debugger.session import DebugSession, Stop
from agentdbg.debugger.sidecar import Sidecar, open_sidecar_for
from agentdbg.debugger.triage import Summaries, first_failing_step, next_failing_run
from agentdbg.debugger.view import StepView, scan_view
from agentdbg.engine.approval import Decision
from agentdbg.model.outcome import outcome_summary
from agentdbg.model.prompt import prompt_at
from agentdbg.model.runs import Cancellable, Document, Growing, StepBlocks
from agentdbg.tui import commands, copying, layout
from agentdbg.tui.approvals import CLOSED, ApprovalAsked, ApprovalDesk, PendingApproval
from agentdbg.tui.confine import Confinement
from agentdbg.tui.forks import RunsWithForks, fork_marks
from agentdbg.tui.layout import PaneTabs
from agentdbg.tui.live import LiveControl, LiveEvent
from agentdbg.tui.safe import one_line, quoted
from agentdbg.tui.screens.approval import DISMISSED, ApprovalScreen
from agentdbg.tui.screens.breakpoints import BreakpointScreen
from agentdbg.tui.screens.fork import ForkScreen
from agentdbg.tui.screens.help import HelpScreen, shown_keys
from agentdbg.tui.screens.lists import RunSwitcher
from agentdbg.tui.screens.log import LogScreen, StopEntry, StopLog
from agentdbg.tui.screens.prompt import (
    ConfirmScreen,
    diff_screen,
    goto_screen,
    open_screen,
    search_screen,
    view_filter_screen,
    write_screen,
)
from agentdbg.tui.screens.whatif import WhatIfResult, WhatIfScreen
from agentdbg.tui.searching import Matches, SearchResult
from agentdbg.tui.settings import THEMES, Settings
from agentdbg.tui.widgets.guards import GuardsPane
from agentdbg.tui.widgets.header import RunHeader, StatusLine
from agentdbg.tui.widgets.memory import MemoryPane
from agentdbg.tui.widgets.scratchpad import PROMPT_STEPS, Scratchpad
from agentdbg.tui.widgets.timeline import Timeline
from agentdbg.tui.widgets.tools import ToolsPane

SIDEBAR_WIDTH = (28, 42, 90)  # min, default, max
PROBLEM_NOTICE_SECONDS = 5.0
PANES = ("timeline", "tools", "memory", "guards")
PROVE_AHEAD_STEPS = 20_000  # a run this long has its steps proven while a search is typed


class Cancel:
    """A job's stop request: Esc asked for it, or the worker running the job was cancelled
    (the app is quitting). Long jobs look at ``is_set()`` every few hundred steps."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.worker_cancelled: threading.Event | None = None  # the worker's, once it runs

    def set(self) -> None:
        self.requested.set()

    def is_set(self) -> bool:
        worker_cancelled = self.worker_cancelled
        return self.requested.is_set() or (worker_cancelled is not None and worker_cancelled.is_set())


class DebuggerApp(App[None]):
    """``agentdbg``: single-step a run forward and back, break where it goes wrong."""

    CSS_PATH = "app.tcss"
    TITLE = "agentdbg"
    BINDINGS = commands.bindings()

    # --- messages from workers -----------------------------------------------------------
    class Done(Message):
        """A worker finished: ``operation`` says which, ``result`` what it returned."""

        def __init__(self, operation: str, result: Any) -> None:
            super().__init__()
            self.operation = operation
            self.result = result

    class Failed(Message):
        def __init__(self, operation: str, error: BaseException) -> None:
            super().__init__()
            self.operation = operation
            self.error = error

    class Progress(Message):
        def __init__(self, operation: str, step: int) -> None:
            super().__init__()
            self.operation = operation
            self.step = step

    class Counted(Message):
        """Every step a search matches, counted in the background after it found one
        (``matches`` None: the count failed)."""

        def __init__(self, text: str, run: Any, matches: Matches | None) -> None:
            super().__init__()
            self.text = text
            self.run = run
            self.matches = matches

    class Stopped(Message):
        """A continue stopped: where and why (a break's reasons, or the run's edge), as data
        for whatever listens; the status line says it in words."""

        def __init__(self, stop: Stop) -> None:
            super().__init__()
            self.stop = stop

    # --- messages from a document being read (its index thread) -------------------------
    class Grew(Message):
        """The document found more runs or steps (at most every 50 ms, and once at the end)."""

        def __init__(self, document: Document) -> None:
            super().__init__()
            self.document = document

    class ProblemsFound(Message):
        """The document found problems reading the file (one message for a burst)."""

    def __init__(self, document: Document | None = None, *, run_index: int = 0,
                 error: str | None = None, save_breakpoints: bool = True, label: str = "",
                 step: int | None = None, diff_with: tuple[Document | str, int, bool] | None = None,
                 allow_code: bool = False, allow_network: bool = False, fork_plan: str | None = None,
                 settings: Settings | None = None, confine: Confinement | None = None):
        """``step``: the step to open at (``--step N``). ``diff_with``: (document or
        ``FILE[:N]``, run index, whether the app closes it) to compare the run shown with as
        soon as the screen is up (``agentdbg diff A B --tui``, ``agentdbg A --diff B``).
        ``fork_plan``: the plan a fork re-runs the file's runs with (``--plan``).
        ``confine``: the paths typed into dialogs must lie in its folder (web mode)."""
        super().__init__()
        # The user's keymap and theme; none by default (tests and embedding see the defaults).
        self.settings = settings if settings is not None else Settings()
        self._problems_pending = threading.Event()
        self.document: Document | None = None
        self.run_index = 0
        self.sessions: dict[int, DebugSession] = {}
        self.forks: list = []  # runs forked in this session, listed after the file's runs
        self.allow_code = allow_code  # what a fork may re-run: the permissions given on the command line
        self.allow_network = allow_network
        self.fork_plan = fork_plan
        self.confine = confine
        self.breakpoints = BreakpointSet()
        self._problems: list[str] = []
        self.stop_log = StopLog()  # every stop of continue / reverse-continue, for e
        self.save_breakpoints = save_breakpoints
        self._sidecar: Sidecar | None = None  # where the breakpoints are saved
        self._save_noticed = ""  # the last thing told about saving them
        self.last_search = ""
        self._matches: Matches | None = None  # every step the last search matches, when counted
        self._count_cancel = Cancel()  # the count of the last search's matches, running behind
        self._prove_cancel = Cancel()  # proofs made while a search is typed
        self._search_said: tuple[str, str] | None = None  # what a search said, until a count adds to it
        self.run_filter = ""  # the run list's filter (r then /)
        self.run_sort: tuple[str, bool] | None = None  # the run list's sort: column, descending
        self.summaries = Summaries([])  # the run list's rows, made as they are first needed
        self.busy: str | None = None  # the operation a worker is running
        self._cancel = Cancel()
        # A document is closed only when no worker reads it: see close_when_idle.
        self._job_lock = threading.Lock()
        self._jobs_running = 0
        self._close_after_job: list[Document] = []
        self._quitting = False
        self._initial = (document, run_index, error, label)
        self._initial_step = step  # --step: where the first run opens
        self._problems_seen = 0
        self._document_problems = 0
        self._last_problem_notice = -PROBLEM_NOTICE_SECONDS
        self._label = label
        self._widths = {"sidebar": SIDEBAR_WIDTH[1]}
        self.narrow = False  # a narrow terminal: the sidebar's panes are tabs beside the scratchpad
        self.tab = "scratchpad"  # the pane those tabs show
        self.what_if_settings: GuardSettings | None = None  # the last asked, offered again
        self.live = LiveControl(self)  # a trace still being written, and its agent
        # A live run's calls to dangerous tools wait here, in the engine's thread, for the dialog.
        self.approvals = ApprovalDesk(self.post_message)
        self._diff_with = diff_with
        self._diff_documents: list[Document] = []  # other files open for the split view

    # --- layout ------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        with Horizontal(id="main"):
            yield Timeline(id="timeline", classes="pane")
            with Vertical(id="detail"):
                yield PaneTabs(id="pane-tabs")  # shown on a narrow terminal only
                with Horizontal(id="body"):
                    yield Scratchpad(id="scratchpad", classes="pane")
                    with Vertical(id="sidebar"):
                        yield GuardsPane(id="guards", classes="pane")
                        yield ToolsPane(id="tools", classes="pane")
                        yield MemoryPane(id="memory", classes="pane")
        yield StatusLine(id="status")
        yield Footer(id="footer")

    def on_mount(self) -> None:
        self.apply_settings()
        for pane, title in (("timeline", "Timeline"), ("scratchpad", "Scratchpad"), ("guards", "Guards"),
                            ("tools", "Tools"), ("memory", "Memory")):
            self.query_one(f"#{pane}").border_title = title
        document, run_index, error, _ = self._initial
        if document is not None:
            self.set_document(document, run_index)
            if self._initial_step is not None and self.session is not None:
                self.go_to_step(self._initial_step)
        else:
            self.show_cursor()
        if error:
            self.show_open_error(error)
        self.query_one(Timeline).focus()
        if self._diff_with is not None:
            other, index, owned = self._diff_with
            self._diff_with = None
            self.start_diff(other, index, owned)
        self.fit_width(self.size.width)

    def apply_settings(self) -> None:
        """The user's keymap and theme; a bad keymap entry is a problem (e lists it)."""
        settings = self.settings
        if settings.theme in THEMES:
            self.theme = settings.theme
        if settings.keymap:
            self.set_keymap(settings.keymap)
        if settings.problems:
            self._problems[:0] = settings.problems
            self._problems_seen += len(settings.problems)
            more = f" (+{len(settings.problems) - 1} more: e lists them)" if len(settings.problems) > 1 else ""
            self.notify(one_line(settings.problems[0], 300) + more, title="Keymap entries left out",
                        severity="warning", timeout=10, markup=False)

    def on_unmount(self) -> None:
        self.live.close()  # a paused agent goes on
        self.approvals.close()  # a step waiting for a decision ends now, without running the call
        self._cancel.set()  # a continue or search still running stops at its next look
        self._count_cancel.set()
        self._prove_cancel.set()
        with self._job_lock:
            self._quitting = True  # and a job not started yet never starts
        self.workers.cancel_group(self, "session")
        self.workers.cancel_group(self, "count")
        self.workers.cancel_group(self, "prove")
        if self.document is not None:
            for run in self.runs:  # a step waiting on a model call gives up at once
                if isinstance(run, Cancellable):
                    run.cancel()
            self.close_when_idle(self.document)  # stops a file's indexing thread
        for document in self._diff_documents:
            self.close_when_idle(document)

    def close_when_idle(self, document: Document) -> None:
        """Close ``document`` now, or as soon as the worker that may be reading it stops:
        a file closed under a reader makes it fail, or read whatever file reuses its
        descriptor."""
        with self._job_lock:
            if self._jobs_running:
                self._close_after_job.append(document)
                return
        document.close()

    # --- the document and its runs ---------------------------------------------------------
    @property
    def session(self) -> DebugSession | None:
        return self.sessions.get(self.run_index)

    @property
    def runs(self) -> RunsWithForks:
        """The file's runs, then the forks made in this session."""
        return RunsWithForks(self.document.runs if self.document is not None else [], self.forks)

    @property
    def current_run(self):
        session = self.session
        return session.run if session is not None else None

    def set_document(self, document: Document, run_index: int = 0, label: str = "") -> None:
        """Show ``document`` (closing the one shown before), at run ``run_index``."""
        old = self.document
        self.document = document
        self._count_cancel.set()  # (a count of the last file's matches)
        self._prove_cancel.set()
        self._label = label or self._label
        self.sessions = {}
        self.forks = []
        self.run_filter = ""
        self.run_sort = None
        self.summaries = Summaries(self.runs)
        self._problems = list(self.settings.problems)  # the keymap's stay listed (told at start)
        self._problems_seen = len(self._problems)
        self._document_problems = 0
        self.breakpoints = self.load_breakpoints(document)
        for run in document.runs:  # a live run asks the user, unless told in advance (--approve)
            if hasattr(run, "approver") and run.approver is None:
                run.approver = self.approvals.ask
        self.run_index = max(0, min(run_index, len(document.runs) - 1))
        if old is not None and old is not document:
            self.close_when_idle(old)
        if not document.runs and not getattr(document, "live", False):
            self.problems.append(f"{document.path}: no run found in this file")
        self._listen_to(document)
        self.live.document_set(document)
        self.show_run()
        self.report_problems()

    def _listen_to(self, document: Document) -> None:
        """Hear from a document read in the background (a trace being indexed or followed):
        its thread posts messages, handled here on the screen's thread; nothing polls."""
        if not isinstance(document, Growing):
            return  # read whole already (an import, a plan run to the end) or a live run
        post = self.post_message
        pending = threading.Event()  # a burst of problems is one message

        def found(problem: object) -> None:
            if not pending.is_set():
                pending.set()
                post(self.ProblemsFound())

        self._problems_pending = pending
        document.subscribe(on_progress=lambda: post(self.Grew(document)), on_problem=found)
        post(self.Grew(document))  # what it found before it was listened to

    @on(Grew)
    def document_grew(self, message: Grew) -> None:
        if message.document is self.document:
            self.poll()

    @on(ProblemsFound)
    def problems_found(self, message: ProblemsFound) -> None:
        self._problems_pending.clear()
        self.report_problems()

    def show_run(self) -> None:
        self._count_cancel.set()  # (a count of another run's matches)
        self._prove_cancel.set()
        document = self.document
        timeline = self.query_one(Timeline)
        runs = self.runs
        if document is None or not runs:
            timeline.show_run(None)
            self.show_cursor()
            return
        session = self.sessions.get(self.run_index)
        if session is None:
            session = self.sessions[self.run_index] = DebugSession(runs[self.run_index], self.breakpoints)
        timeline.show_run(session.run, self.gutter, session.view)
        timeline.set_fork_marks(fork_marks(runs, self.run_index))
        self.live.run_shown()
        self.show_cursor()
        total = len(runs)
        where = f"run {self.run_index + 1} of {total} · " if total > 1 else ""
        if session.cursor == 0:
            self.say(f"{where}at the start: n steps, c continues to the first break, ? lists every key")
        else:
            self.say(f"{where}{self.describe_step()}")

    def load_breakpoints(self, document: Document) -> BreakpointSet:
        """The breakpoints saved beside ``document``'s file; a file kept unread is a problem."""
        self._sidecar = None
        self._save_noticed = ""
        if not self.save_breakpoints or not Path(document.path).is_file():
            return BreakpointSet()
        self._sidecar = open_sidecar_for(document.path, document.kind)
        self.problems.extend(self._sidecar.problems())
        if self._sidecar.migrated_from is not None:
            self.notify(f"read from {one_line(str(self._sidecar.migrated_from), 200)}; saved from now on to "
                        f"{one_line(str(self._sidecar.path), 200)} (the plan's folder is left alone)",
                        title="Breakpoints moved", timeout=10, markup=False)
        return self._sidecar.breakpoints

    def save_breakpoint_file(self) -> bool:
        """Save the breakpoints beside the file; False (after saying why, once) when they
        were not saved."""
        sidecar = self._sidecar
        if sidecar is None:
            return True
        try:
            sidecar.save(self.breakpoints)
        except ValueError as exc:
            if self._notify_save_once(str(exc), "Breakpoints not saved", "warning"):
                problems = self.problems  # e lists it after the notice is gone
                problems.append(str(exc))
                if self._problems_seen == len(problems) - 1:
                    self._problems_seen += 1  # told already, by the notice
            return False
        if sidecar.kept:
            self._notify_save_once(sidecar.notice(), "Breakpoints saved under another name", "information")
        return True

    def _notify_save_once(self, message: str, title: str, severity: str) -> bool:
        """Notify, unless this was the last thing said (every b would say it again)."""
        if message == self._save_noticed:
            return False
        self._save_noticed = message
        self.notify(one_line(message, 400), title=title, severity=severity, timeout=10, markup=False)
        return True

    @property
    def problems(self) -> list[str]:
        """Every problem so far: the app's own, then the file's (a file being read finds
        more as its index grows and as damaged steps are first drawn)."""
        if self.document is not None:
            found = self.document.problems
            self._problems.extend(str(problem) for problem in found[self._document_problems:len(found)])
            self._document_problems = len(found)
        return self._problems

    def report_problems(self) -> None:
        """Tell about problems not told yet."""
        new = self.problems[self._problems_seen:]
        self._problems_seen += len(new)
        if not new:
            return
        now = time.monotonic()
        if now - self._last_problem_notice < PROBLEM_NOTICE_SECONDS:
            return  # a damaged file found while indexing must not flood the screen
        self._last_problem_notice = now
        first = one_line(new[0], 300)
        more = f" (+{len(new) - 1} more)" if len(new) > 1 else ""
        self.notify(f"{first}{more}\ne lists them; the valid part is open.",
                    title="Problems reading the file", severity="warning", timeout=8, markup=False)

    def show_open_error(self, error: str) -> None:
        self.problems.append(error)
        self._problems_seen = len(self._problems)
        self.query_one(Scratchpad).empty_message = Text.assemble(
            ("Could not open the file\n\n", "bold red"), (one_line(error, 2000), ""),
            ("\n\nPress o to open another file, q to quit.", "dim"))
        self.query_one(Scratchpad).rebuild()
        self.notify(one_line(error, 300), title="Could not open", severity="error", timeout=10, markup=False)
        self.say("nothing open: press o to open a file", "bold red")

    # --- painting the cursor ------------------------------------------------------------
    def gutter(self, step: int) -> str:
        breakpoint = self.breakpoints.step_breakpoint(step)
        if breakpoint is not None:
            return "on" if breakpoint.enabled else "off"
        return ""

    def show_cursor(self) -> None:
        """Bring every pane to the session's cursor."""
        session = self.session
        header = self.query_one(RunHeader)
        if session is None:
            header.show(None, 0)
            self.query_one(Scratchpad).show(None, 0)
            self.query_one(ToolsPane).show(None, None, None)
            self.query_one(MemoryPane).show(None, None)
            self.query_one(GuardsPane).show(None, None)
            return
        run = session.run
        step = session.cursor
        try:
            record = session.record()
            state = session.state()
        except (IndexError, ValueError, OSError) as exc:
            self.say(f"step {step} cannot be read: {one_line(str(exc), 200)}", "bold red")
            return
        timeline = self.query_one(Timeline)
        timeline.set_step_count(run.step_count)
        timeline.set_cursor(step)
        self.query_one(Scratchpad).show(run, step)
        self.query_one(ToolsPane).show(run.info, state, record)
        self.query_one(MemoryPane).show(run.info, state)
        self.query_one(GuardsPane).show(run, state)
        total = len(self.runs) if self.document is not None else 1
        header.show(run, step, self.run_index, total, session.view)

    def describe_step(self) -> str:
        session = self.session
        if session is None or session.cursor == 0:
            return "no step yet"
        reasons = session.reasons()
        where = session.describe()
        return f"{where}: {'; '.join(reasons)}" if reasons else where

    def say(self, message: str, style: str = "") -> None:
        self.query_one(StatusLine).say(message, style)

    def _says_position(self, session: DebugSession) -> bool:
        """Does the status line still say where the cursor is in a run read so far?"""
        message = self.query_one(StatusLine).message
        return message.startswith(f"step {session.cursor} of ") and "so far" in message.split(":")[0]

    def poll(self) -> None:
        """A file being indexed or followed, or a live run moved by a worker, has grown:
        the timeline, header and live breaks catch up (called on the document's messages)."""
        try:
            self._poll()
        except NoMatches:  # the screen's widgets are being taken down: the app is quitting
            pass

    def _poll(self) -> None:
        session = self.session
        if session is None:
            if self.document is not None and self.document.runs:  # a followed file's first run began
                self.show_run()
            self.live.tick()
            return
        run = session.run
        timeline = self.query_one(Timeline)
        header = self.query_one(RunHeader)
        total = len(self.runs) if self.document is not None else 1
        grew = run.step_count != timeline.step_count
        if grew:
            timeline.set_step_count(run.step_count)
        if grew or total != header.run_total:  # the index found more steps, or more runs
            header.show(run, session.cursor, self.run_index, total, session.view)
        if grew and session.cursor == 0 and run.step_count > 0 and not session.is_live:
            session.goto(1)
            self.show_cursor()
        elif grew and self._says_position(session):  # "step 1 of 102,599 so far": counted again
            self.say(self.describe_step(), self.reason_style())
        self.report_problems()
        self.live.tick()

    @on(LiveEvent)
    def live_event(self, event: LiveEvent) -> None:
        try:
            if event.kind == "grew":
                self._poll()
            else:
                self.live.handle(event)
        except NoMatches:  # the app is quitting
            pass

    # --- moving -------------------------------------------------------------------------
    def _session_ready(self) -> DebugSession | None:
        session = self.session
        if session is None:
            self.say("no run open: press o to open a file", "bold red")
            return None
        if self.busy:
            self.say(f"{self.busy} in progress: Esc cancels it", "yellow")
            return None
        return session

    def needs_engine(self, step: int) -> bool:
        """Reaching ``step`` means running a live engine (which may take a tool's timeout)."""
        session = self.session
        return session is not None and session.is_live and not session.run.complete \
            and step > session.run.step_count

    def move(self, operation: str, action: Callable[[DebugSession], Any], target: int) -> None:
        """Run ``action`` on the session now, or in a worker when it must run the engine."""
        session = self._session_ready()
        if session is None:
            return
        if self.needs_engine(target):
            self.start_worker(operation, partial(action, session))
            return
        try:
            result = action(session)
        except Exception as exc:  # a damaged record must not end the app
            self.failed(operation, exc)
            return
        self.finished(operation, result)

    def action_step_forward(self) -> None:
        session = self.session
        if session is not None and not self.busy and self.live.on_step_forward():
            return
        self.move("step", lambda s: s.step_forward(), (session.cursor + 1) if session else 0)

    def action_step_back(self) -> None:
        self.move("back", lambda s: s.step_back(), 0)

    def action_first_step(self) -> None:
        self.move("home", lambda s: s.home(), 1)

    def action_last_step(self) -> None:
        self.live.on_last_step()
        self.move("end", lambda s: s.end(), 0)

    def action_continue_forward(self) -> None:
        session = self._session_ready()
        if session is not None and self.live.on_continue():
            return
        if session is not None:
            self.start_worker("continue", partial(self._continue, session, True), cancellable=True)

    def action_continue_back(self) -> None:
        session = self._session_ready()
        if session is not None:
            self.start_worker("reverse-continue", partial(self._continue, session, False), cancellable=True)

    def _continue(self, session: DebugSession, forward: bool, cancel: Cancel) -> Stop | None:
        operation = "continue" if forward else "reverse-continue"
        progress = partial(self._progress, operation)
        if forward:
            return session.continue_forward(cancel=cancel, progress=progress)
        return session.continue_back(cancel=cancel, progress=progress)

    def _progress(self, operation: str, step: int) -> None:
        self.post_message(self.Progress(operation, step))

    def action_cancel(self) -> None:
        if self.live.cancel():
            return
        if self.busy:
            self._cancel.set()
            self.say(f"cancelling {self.busy}…", "yellow")
        elif self.screen.maximized is not None:
            self.screen.minimize()

    def action_goto(self) -> None:
        session = self._session_ready()
        if session is None:
            return

        def answer(value: str | None) -> None:
            if value and value.strip().isdigit():
                step = int(value.strip())
                self.move("go to", lambda s: s.goto(step), step)

        self.push_screen(goto_screen(session.cursor, session.run.step_count, not session.run.complete), answer)

    def go_to_step(self, step: int) -> None:
        self.move("go to", lambda s: s.goto(step), step)

    @on(Timeline.Selected)
    def timeline_selected(self, event: Timeline.Selected) -> None:
        self.go_to_step(event.step)

    # --- workers ------------------------------------------------------------------------
    def start_worker(self, operation: str, job: Callable[..., Any], cancellable: bool = False) -> None:
        """Run ``job`` in a thread worker; a cancellable job is called with its ``Cancel``
        and must look at it often (Esc sets it, and so does quitting)."""
        self.busy = operation
        cancel = self._cancel = Cancel()
        hint = " (Esc cancels)" if cancellable else ""
        self.say(f"{operation}…{hint}", "bold cyan")
        self._work(operation, partial(job, cancel) if cancellable else job, cancel)

    @work(thread=True, exclusive=True, exit_on_error=False, group="session")
    def _work(self, operation: str, job: Callable[[], Any], cancel: Cancel) -> None:
        cancel.worker_cancelled = get_current_worker().cancelled_event
        with self._reading() as reading:
            if not reading:
                return
            try:
                result = job()
            except Exception as exc:  # reported in the app, never a traceback
                self.post_message(self.Failed(operation, exc))
                return
        self.post_message(self.Done(operation, result))

    @contextmanager
    def _reading(self) -> Iterator[bool]:
        """While a worker reads the document: it is closed only after (``close_when_idle``).
        Gives False when the app is quitting: the worker must not start."""
        with self._job_lock:
            quitting = self._quitting
            if not quitting:
                self._jobs_running += 1
        if quitting:
            yield False
            return
        try:
            yield True
        finally:
            with self._job_lock:
                self._jobs_running -= 1
                closing: list[Document] = []
                if not self._jobs_running:
                    closing, self._close_after_job = self._close_after_job, []
            for document in closing:
                document.close()

    @on(Done)
    def worker_done(self, message: Done) -> None:
        self.busy = None
        self.finished(message.operation, message.result)

    @on(Failed)
    def worker_failed(self, message: Failed) -> None:
        self.busy = None
        self.failed(message.operation, message.error)

    @on(Progress)
    def worker_progress(self, message: Progress) -> None:
        self.poll()  # a live run stepped by the worker has grown
        if self.busy:
            unit = "run" if message.operation.endswith("failing run") else "step"
            self.say(f"{message.operation}… at {unit} {message.step:,} (Esc cancels)", "bold cyan")

    @on(ApprovalAsked)
    def approval_asked(self, message: ApprovalAsked) -> None:
        pending = message.pending
        if self._quitting:
            self.approvals.answer(pending, CLOSED)
            return
        request = pending.request
        self.say(f"step {request.step}: {one_line(request.tool, 60)} is dangerous and waits for your decision",
                 "bold magenta")
        self.push_screen(ApprovalScreen(request), partial(self.approval_decided, pending))

    def approval_decided(self, pending: PendingApproval, decision: Decision | None) -> None:
        decision = decision if decision is not None else Decision.deny(DISMISSED, by="user")
        self.approvals.answer(pending, decision)
        if self.busy:
            self.say(f"{decision.decision}: {self.busy}…", "bold cyan")

    def failed(self, operation: str, error: BaseException) -> None:
        self.show_cursor()
        text = one_line(str(error) or type(error).__name__, 300)
        self.say(f"{operation} failed: {text}", "bold red")
        self.notify(text, title=f"{operation} failed", severity="error", markup=False)

    def finished(self, operation: str, result: Any) -> None:
        """A move ended (now or in a worker): repaint and say what happened."""
        if operation == "what if":  # no move: the dialog shows it
            self._after_what_if(result)
            return
        self.live.moved(operation)
        handler = getattr(self, f"_after_{operation.replace(' ', '_').replace('-', '_')}", None)
        if handler is not None:
            handler(result)
            return
        self.show_cursor()
        session = self.session
        if operation in ("step", "back") and result is False and session is not None and session.view is not None:
            which = "after" if operation == "step" else "before"
            self.say(f"no step {which} this one matches {one_line(session.view.text, 60)} "
                     f"({session.view.describe()}; f changes the filter, an empty one shows every step)", "bold")
        elif operation == "step" and result is False and session is not None:
            self.say(f"at the last step: the run ended ({self.outcome()})", "bold")
        elif operation == "back" and result is False:
            self.say("at the first step", "bold")
        else:
            self.say(self.describe_step(), self.reason_style())
        if operation == "end":
            self.live.after_end()

    def _after_continue(self, stop: Stop | None) -> None:
        self.show_cursor()
        if stop is not None:
            self.log_stop(stop)
        if self.live.after_continue(stop):
            return
        if stop is None:
            self.say("continue cancelled: the cursor stays here", "yellow")
        else:
            self.say(stop.message, "bold red" if stop.at_breakpoint else "bold")
            self.post_message(self.Stopped(stop))

    _after_reverse_continue = _after_continue

    def log_stop(self, stop: Stop) -> None:
        """Keep ``stop`` for the log (e), with every reason, however long."""
        self.stop_log.add(self.run_index, stop.step, list(stop.reasons), stop.at_breakpoint)

    def _after_search(self, found: SearchResult) -> None:
        step, query = found.step, found.query
        if found.cancelled:
            self.say("search cancelled: the cursor stays here", "yellow")
            return
        if found.matches is not None:
            self._matches = found.matches
        what = f"filter {one_line(query.text, 80)}" if query.is_filter else quoted(query.text, 80)
        # Text that is not a valid regex is looked for as it is: say so, and why.
        reason = None if query.is_filter else literal_reason(query.text)
        literally = f" (looked for literally: {one_line(reason, 120)})" if reason else ""
        if step is None:
            self.say(f"no match for {what}{literally}", "yellow")
            return
        self.session.goto(step)
        self.show_cursor()
        said = f"match for {what} at step {step:,}{literally}"
        matches = found.matches
        if matches is not None and step in matches.index:
            self.say(f"{said}: match {matches.index[step]:,} of {len(matches.steps):,} (. next, , previous)", "bold")
            return
        self.say(f"{said} (. next, , previous; counting the matches…)", "bold")
        self._search_said = (self.query_one(StatusLine).message, said)
        self.count_matches(query, self.session)

    def _after_open(self, opened: tuple[Document | None, str, str]) -> None:
        document, path, error = opened
        if document is None:
            self.notify(one_line(error, 300), title="Could not open", severity="error", timeout=10, markup=False)
            self.problems.append(error)
            self._problems_seen = len(self._problems)
            self.say(f"could not open {one_line(path, 100)}: {one_line(error, 200)}", "bold red")
            return
        self.set_document(document, 0, label=path)

    def _after_write(self, written: tuple[str, int]) -> None:
        path, count = written
        self.say(f"wrote {count:,} events to {one_line(path, 200)}", "bold green")
        self.notify(f"{count:,} events written to {one_line(path, 200)}", title="Trace written", markup=False)

    def outcome(self) -> str:
        return outcome_summary(self.current_run)

    def reason_style(self) -> str:
        session = self.session
        return "bold red" if session is not None and session.reasons() else ""

    # --- breakpoints --------------------------------------------------------------------
    def action_toggle_breakpoint(self) -> None:
        session = self.session
        if session is None or session.cursor == 0:
            self.say("no step to put a breakpoint on yet", "yellow")
            return
        on_now = self.breakpoints.toggle_step(session.cursor)
        saved = self.breakpoints_changed()
        unsaved = "" if saved else " (not saved to a file: e says why)"
        self.say(f"breakpoint {'set on' if on_now else 'removed from'} step {session.cursor}{unsaved}",
                 "bold" if saved else "bold yellow")

    def action_breakpoints(self) -> None:
        session = self.session
        record = None
        if session is not None and session.cursor:
            try:
                record = session.record()
            except (IndexError, ValueError, OSError):
                record = None
        self.push_screen(BreakpointScreen(self.breakpoints, session.cursor if session else 0,
                                          record.tool if record is not None else None))

    @on(BreakpointScreen.Changed)
    def breakpoints_changed(self) -> bool:
        saved = self.save_breakpoint_file()
        self.query_one(Timeline).refresh_gutter()
        return saved

    # --- search -------------------------------------------------------------------------
    def action_search(self) -> None:
        session = self._session_ready()
        if session is None:
            return
        self.prove_ahead(session)

        def answer(value: str | None) -> None:
            if value is None:
                return
            self._count_cancel.set()  # (the last search's count)
            if not value.strip():  # an empty search clears the highlight
                self.last_search = ""
                self._matches = None
                self.query_one(Scratchpad).set_highlight(None)
                self.say("search cleared")
                return
            self.last_search = value
            self.search(True)

        self.push_screen(search_screen(self.last_search), answer)

    def action_search_next(self) -> None:
        self.search(True)

    def action_search_previous(self) -> None:
        self.search(False)

    def search(self, forward: bool) -> None:
        session = self._session_ready()
        if session is None:
            return
        if not self.last_search:
            self.say("nothing searched yet: / searches", "yellow")
            return
        try:
            query = Query.parse(self.last_search)
        except ValueError as exc:
            self.say(f"search not run: {one_line(str(exc), 200)}", "bold red")
            return
        self.query_one(Scratchpad).set_highlight(query)
        run = session.run
        known = self._matches
        if known is not None and known.fits(query.text, run):  # every match known: no scan
            self._after_search(SearchResult(known.next_from(session.cursor, forward), query, False, known))
            return

        self._prove_cancel.set()  # (the search proves the rest as it goes)

        def job(cancel: Cancel) -> SearchResult:
            step = find_step(run, query, session.cursor, forward=forward, cancel=cancel, proofs=session.proofs)
            return SearchResult(step, query, step is None and cancel.is_set(), None)

        self.start_worker("search", job, cancellable=True)

    def count_matches(self, query: Query, session: DebugSession) -> None:
        """Count every step ``query`` matches, behind the found one (for "match 3 of 17",
        and so that . and , move without another scan); a new search, another run or
        file, and quitting stop it."""
        self._count_cancel.set()
        cancel = self._count_cancel = Cancel()
        self._count(query, session, cancel)

    @work(thread=True, exclusive=True, exit_on_error=False, group="count")
    def _count(self, query: Query, session: DebugSession, cancel: Cancel) -> None:
        cancel.worker_cancelled = get_current_worker().cancelled_event
        run = session.run
        with self._reading() as reading:
            if not reading:
                return
            try:
                complete, count = run.complete, run.step_count
                steps = matching_steps(run, query, cancel, proofs=session.proofs)
            except Exception:  # (the run cannot be read to the end: the match shown stands)
                self.post_message(self.Counted(query.text, run, None))
                return
        if steps is not None and not cancel.is_set():
            self.post_message(self.Counted(query.text, run, Matches(query.text, run, count, complete, steps)))

    def prove_ahead(self, session: DebugSession) -> None:
        """While a search is typed over a long trace file, prove what its scan would
        (``candidates.prove_ahead``); the search itself stops this and proves the rest."""
        self._prove_cancel.set()
        run = session.run
        if not isinstance(run, StepBlocks) or run.step_count < PROVE_AHEAD_STEPS:
            return
        cancel = self._prove_cancel = Cancel()
        self._prove(session, cancel)

    @work(thread=True, exclusive=True, exit_on_error=False, group="prove")
    def _prove(self, session: DebugSession, cancel: Cancel) -> None:
        cancel.worker_cancelled = get_current_worker().cancelled_event
        with self._reading() as reading:
            if reading:
                try:
                    prove_ahead(session.run, session.proofs, cancel)
                except Exception:  # (only an early start: the search proves what is left)
                    pass

    @on(Counted)
    def matches_counted(self, message: Counted) -> None:
        matches = message.matches
        session = self.session
        if session is None or message.run is not session.run or message.text != self.last_search:
            return
        said, self._search_said = self._search_said, None
        if said is None or said[0] != self.query_one(StatusLine).message:
            said = None  # (something else was said since: it stays)
        if matches is None:
            if said is not None:
                self.say(f"{said[1]} (. next, , previous; the matches could not be counted)", "bold")
            return
        self._matches = matches
        step = session.cursor
        if said is not None and step in matches.index:
            self.say(f"{said[1]}: match {matches.index[step]:,} of {len(matches.steps):,} (. next, , previous)",
                     "bold")

    # --- files --------------------------------------------------------------------------
    def action_open_file(self) -> None:
        if self.busy:
            self.say(f"{self.busy} in progress: Esc cancels it", "yellow")
            return
        initial = ""
        if self.document is not None and Path(self.document.path).is_file():
            initial = str(Path(self.document.path).parent) + "/"
            if one_line(initial) != initial:  # an input shows what it holds: never unsafe text
                initial = ""

        def answer(value: str | None) -> None:
            if value and value.strip():
                self.open_path(value.strip())

        self.push_screen(open_screen(initial, self.confine), answer)

    def open_path(self, path: str) -> None:
        from agentdbg.tui.opening import open_for_app

        if self.refused(path):
            return
        self.start_worker("open", partial(open_for_app, path))

    def refused(self, path: str) -> bool:
        """Is ``path`` out of bounds (web mode)? Then the status line says why."""
        refusal = self.confine.refusal(path) if self.confine is not None else None
        if refusal is not None:
            self.say(f"refused: {refusal}", "bold red")
            self.notify(refusal, title="Outside the folder served", severity="error", timeout=10, markup=False)
        return refusal is not None

    def action_write_trace(self) -> None:
        session = self._session_ready()
        if session is None:
            return
        from agentdbg.tui.opening import default_trace_name, write_run

        fork = session.run.info.fork
        parent_number = fork.get("parent") if fork else None
        # A fork is written after its parent (both as far as they have run).
        parent = self.runs[parent_number - 1] if isinstance(parent_number, int) \
            and 1 <= parent_number <= len(self.runs) and parent_number - 1 != self.run_index else None

        def write(path: Path) -> None:
            self.start_worker("write", partial(write_run, session.run, str(path), parent))

        def answer(value: str | None) -> None:
            if not value or not value.strip() or self.refused(value.strip()):
                return
            path = Path(value.strip()).expanduser().absolute()
            if path.exists() and not path.is_dir():  # never replaced without asking
                question = f"{one_line(str(path), 300)} exists. Replace it with this run's trace?"
                self.push_screen(ConfirmScreen("Replace file?", question, id="confirm-write"),
                                 lambda yes: write(path) if yes else self.say("not written", "yellow"))
                return
            write(path)

        self.push_screen(write_screen(default_trace_name(self.document, session.run), self.confine), answer)

    def action_switch_run(self) -> None:
        document = self.document
        if document is None or len(self.runs) < 2:
            self.say("this file holds a single run", "yellow")
            return
        if self.busy:
            self.say(f"{self.busy} in progress: Esc cancels it", "yellow")
            return

        switcher = RunSwitcher(self.runs, self.run_index, self.run_filter, self.summaries, self.run_sort)

        def answer(index: int | None) -> None:
            self.run_filter = switcher.filter_text  # the list opens filtered and sorted the same next time
            self.run_sort = switcher.sort
            if index is not None and index != self.run_index:
                self.run_index = index
                self.show_run()

        self.push_screen(switcher, answer)

    # --- diff ---------------------------------------------------------------------------
    def action_diff(self) -> None:
        from agentdbg.diff import split_run

        session = self._session_ready()
        document = self.document
        if session is None or document is None:
            return
        several = len(document.runs) > 1
        suggested = str(self.run_index + 2 if self.run_index + 1 < len(document.runs) else 1) if several else ""

        def answer(value: str | None) -> None:
            value = (value or "").strip()
            if not value:
                return
            if value.isdigit():
                number = int(value)
                if not 1 <= number <= len(document.runs):
                    self.say(f"no run {number}: this file holds {len(document.runs)}", "bold red")
                    return
                self.start_diff(document, number - 1, False)
            elif not self.refused(split_run(value)[0]):
                self.start_diff(value, 0, True)

        self.push_screen(diff_screen(suggested, several), answer)

    def start_diff(self, other: Document | str, index: int, owned: bool) -> None:
        """Compare the run shown with run ``index`` of ``other`` (a document, or a path
        ``FILE[:N]`` opened here) in a worker; the split view opens when it is done."""
        session = self._session_ready()
        if session is None:
            if owned and isinstance(other, Document):
                other.close()
            return
        from agentdbg.tui.diffing import compare_for_app

        progress = partial(self._progress, "diff")
        self.start_worker("diff", partial(compare_for_app, session.run, other, index, owned, progress),
                          cancellable=True)

    def _after_diff(self, compared) -> None:
        from agentdbg.tui.screens.diff import DiffScreen

        self.show_cursor()
        if compared.error:
            self.notify(one_line(compared.error, 300), title="Could not compare", severity="error", timeout=10,
                        markup=False)
            self.say(f"diff: {one_line(compared.error, 200)}", "bold red")
            return
        result = compared.result
        if result is None:
            self.say("diff cancelled", "yellow")
            return
        this = self._label or (self.document.path if self.document is not None else "")
        label_a = f"run {self.run_index + 1} · {getattr(self.current_run, 'title', '')} · {this}"

        if compared.owned is not None:
            self._diff_documents.append(compared.owned)

        def closed(step: int | None) -> None:
            if compared.owned is not None and compared.owned in self._diff_documents:
                self._diff_documents.remove(compared.owned)
                self.close_when_idle(compared.owned)
            if step:
                self.go_to_step(step)
            else:
                self.say(self.describe_step(), self.reason_style())

        said = "the runs are the same" if result.identical else "the runs differ: } next difference, Esc closes"
        if not result.a.complete:  # a live plan, or a file still being written
            said += f" (this run compared as far as it has gone: {result.a.step_count:,} steps)"
        self.say(said, "bold green" if result.identical else "bold")
        session = self.session
        self.push_screen(DiffScreen(result, label_a, compared.label, session.cursor if session else 0), closed)

    def action_attach(self) -> None:
        self.live.toggle_attach()

    # --- triage: failing runs, the view filter ---------------------------------------------
    def action_next_failing_run(self, direction: int) -> None:
        document = self.document
        if self._session_ready() is None or document is None:
            return
        summaries, start = self.summaries, self.run_index
        runs = document.runs

        operation = "next failing run" if direction > 0 else "previous failing run"
        progress = partial(self._progress, operation)

        def job(cancel: Cancel) -> tuple[int | None, int | None, int]:
            index = next_failing_run(summaries, start, direction, cancel, progress)
            step = first_failing_step(runs[index], cancel) if index is not None else None
            return index, step, direction

        self.start_worker(operation, job, cancellable=True)

    def _after_next_failing_run(self, found: tuple[int | None, int | None, int]) -> None:
        index, step, direction = found
        if self._cancel.is_set():
            self.say("cancelled: the cursor stays here", "yellow")
            return
        if index is None:
            way = "after" if direction > 0 else "before"
            total = len(self.document.runs) if self.document is not None else 0
            self.say(f"no failing run {way} run {self.run_index + 1} of {total:,} "
                     "(failing: an error, a guard stopped it, or judged wrong)", "bold")
            return
        self.run_index = index
        self.show_run()
        session = self.session
        if session is not None and step is not None:
            session.goto(step)
            self.show_cursor()
        summary = self.summaries.get(index)
        why = f" ({summary.why_failing()})" if summary is not None else ""
        total = len(self.document.runs) if self.document is not None else 0
        self.say(f"failing run {index + 1} of {total:,}{why} · {self.describe_step()}", "bold red")

    _after_previous_failing_run = _after_next_failing_run

    def action_view_filter(self) -> None:
        session = self._session_ready()
        if session is None:
            return

        def answer(value: str | None) -> None:
            if value is None:
                return
            text = value.strip()
            if not text:
                self.set_view(None)
                return
            from agentdbg.debugger.filters import parse_filter

            flt = parse_filter(text)  # the dialog let only a valid filter through
            run = session.run
            progress = partial(self._progress, "view filter")
            self.start_worker("view filter", lambda cancel: scan_view(run, text, flt, cancel, progress),
                              cancellable=True)

        self.push_screen(view_filter_screen(session.view.text if session.view is not None else ""), answer)

    def _after_view_filter(self, view: StepView | None) -> None:
        session = self.session
        if view is None or session is None:
            self.say("view filter cancelled: the view is unchanged", "yellow")
            return
        if not len(view):
            self.say(f"no step of this run matches {one_line(view.text, 80)}: the view is unchanged", "yellow")
            return
        self.set_view(view)

    def set_view(self, view: StepView | None) -> None:
        """Show only ``view``'s steps (None: every step); the cursor moves to the nearest one kept."""
        session = self.session
        if session is None:
            return
        had = session.view
        session.view = view
        if view is not None:
            nearest = view.nearest(session.cursor)
            if nearest is not None:
                session.goto(nearest)
        self.query_one(Timeline).set_view(view)
        self.show_cursor()
        if view is None:
            self.say("view filter cleared: every step shown" if had is not None else "no view filter: every step shown")
        else:
            self.say(f"view: {view.describe()} match {one_line(view.text, 80)} "
                     "(n / p move between them; f and an empty filter show every step)", "bold")

    # --- fork ---------------------------------------------------------------------------
    def action_fork(self) -> None:
        """E: edit this step's thought, action or observation and run the rest as a new run."""
        session = self._session_ready()
        if session is None:
            return
        if session.cursor == 0:
            self.say("no step to fork at yet: n takes the first", "yellow")
            return
        index = self.run_index
        document = self.document
        allow = {"allow_code": self.allow_code, "allow_network": self.allow_network, "plan": self.fork_plan}

        def job() -> tuple:
            from agentdbg.forking import ForkError, plan_for_run

            try:
                plan = plan_for_run(document, index, **allow) if index < len(document.runs) \
                    else self.forks[index - len(document.runs)].plan
                return plan, plan.build_agent().policy.format, ""
            except ForkError as exc:
                return None, "", str(exc)

        self.start_worker("fork check", job)

    def _after_fork_check(self, found: tuple) -> None:
        plan, format, error = found
        session = self.session
        if plan is None or session is None:
            self.say(one_line(error, 300), "bold red")
            self.notify(one_line(error, 400), title="Cannot fork this run", severity="error", timeout=10, markup=False)
            return
        self.say(self.describe_step(), self.reason_style())
        record = session.record()
        if record is None:
            return
        index, step = self.run_index, record.step
        label = f"run {index + 1}" if len(self.runs) > 1 else "this run"

        def answer(edit) -> None:
            if edit is not None:
                self.start_fork(plan, index, step, edit)

        self.push_screen(ForkScreen(record, format, label), answer)

    def start_fork(self, plan, index: int, step: int, edit) -> None:
        runs = list(self.runs)
        document = self.document
        # The parent's way of deciding dangerous calls (--approve), else the dialog.
        approver = getattr(runs[index], "approver", None) or self.approvals.ask

        def job(cancel: Cancel) -> tuple:
            from agentdbg.forking import ForkError, fork_live_run

            try:
                run = fork_live_run(plan, document, runs, index, step, edit, approver=approver,
                                    cancelled=cancel.is_set)
                run.plan = plan  # a fork of this fork re-runs the same plan
                run.advance()  # the edited step
            except ForkError as exc:
                return None, str(exc)
            return run, ""

        self.start_worker("fork", job, cancellable=True)

    def _after_fork(self, made: tuple) -> None:
        run, error = made
        if run is None:
            self.show_cursor()
            self.say(f"not forked: {one_line(error, 300)}", "bold red")
            self.notify(one_line(error, 400), title="Cannot fork", severity="error", timeout=10, markup=False)
            return
        self.forks.append(run)
        self.run_index = len(self.runs) - 1
        self.show_run()
        session = self.session
        if session is not None:
            session.goto(run.info.fork["step"])
            self.show_cursor()
        self.say(f"run {self.run_index + 1}: {one_line(run.info.fork_text(), 200)} · n/c run on, r switches runs",
                 "bold magenta")

    # --- what if ------------------------------------------------------------------------
    def action_what_if(self) -> None:
        session = self._session_ready()
        if session is None:
            return
        recorded = GuardSettings.of_run(session.run.info.guards)

        def answer(step: int | None) -> None:
            if self.busy == "what if":
                self._cancel.set()  # closed while re-scoring: its result is not wanted
            if step is not None:
                self.go_to_step(step)

        self.push_screen(WhatIfScreen(self.what_if_settings or recorded, recorded), answer)

    @on(WhatIfScreen.Asked)
    def what_if_asked(self, message: WhatIfScreen.Asked) -> None:
        session = self.session
        if session is None:
            return
        self.what_if_settings = message.settings
        run = session.run

        def job(cancel: Cancel) -> WhatIfResult:
            complete = run.complete  # before reading: a live run may grow meanwhile
            results = rescore_run(run, [message.settings], cancelled=cancel.is_set)
            return WhatIfResult(results[0] if results else None, complete)

        self.start_worker("what if", job, cancellable=True)

    def _after_what_if(self, shown: WhatIfResult) -> None:
        self.say(self.describe_step(), self.reason_style())
        if isinstance(self.screen, WhatIfScreen):
            self.screen.show_result(shown)

    def action_show_log(self) -> None:
        runs = len(self.document.runs) if self.document is not None else 1

        def answer(entry: StopEntry | None) -> None:
            if entry is None or self.document is None or entry.run_index >= len(self.document.runs):
                return
            if entry.run_index != self.run_index:
                self.run_index = entry.run_index
                self.show_run()
            self.go_to_step(entry.step)

        self.push_screen(LogScreen(self.stop_log, list(self.problems), runs), answer)

    # --- view ---------------------------------------------------------------------------
    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.settings.keymap))

    def action_toggle_theme(self) -> None:
        theme = THEMES[1] if self.theme == THEMES[0] else THEMES[0]
        self.theme = theme
        problem = self.settings.remember_theme(theme)
        if problem:
            self.notify(one_line(problem, 300), title="Theme", severity="warning", markup=False)
        self.say(f"{'light' if theme == THEMES[1] else 'dark'} theme (t switches back)")

    # --- copy ---------------------------------------------------------------------------
    def action_copy_step(self) -> None:
        focused = self.focused
        if isinstance(focused, (ToolsPane, MemoryPane, GuardsPane)):
            name = (focused.id or "pane").capitalize()
            self.copy_text("\n".join(focused.line_texts).rstrip() + "\n", f"the {name} pane")
            return
        record = self._current_record()
        if record is None:
            return
        if isinstance(focused, Scratchpad) and focused.prompt_view and self.current_run is not None:
            try:  # the prompt view shown: copy the prompt, as the view rebuilds it
                prompt = prompt_at(self.current_run, record.step, max_steps_shown=PROMPT_STEPS)
            except (IndexError, ValueError, OSError) as exc:
                self.say(f"the prompt cannot be rebuilt: {one_line(str(exc), 200)}", "bold red")
                return
            self.copy_text(prompt, f"the prompt of step {record.step}")
            return
        self.copy_text(copying.step_text(record), f"step {record.step} as text")

    def action_copy_step_json(self) -> None:
        record = self._current_record()
        if record is not None:
            count = len(record.events)
            self.copy_text(copying.step_json(record),
                           f"step {record.step} as JSON ({count} event{'s' if count != 1 else ''})")

    def _current_record(self):
        session = self.session
        if session is None or session.cursor == 0:
            self.say("no step to copy yet: n steps", "yellow")
            return None
        try:
            return session.record()
        except (IndexError, ValueError, OSError) as exc:
            self.say(f"step {session.cursor} cannot be read: {one_line(str(exc), 200)}", "bold red")
            return None

    def copy_text(self, text: str, what: str) -> None:
        text, cut = copying.limited(text)
        self.copy_to_clipboard(text)
        more = f", cut: {cut:,} more characters left out" if cut else ""
        self.notify(f"Copied {what}: {len(text):,} characters{more}", title="Copied", markup=False)
        self.say(f"copied {what} to the clipboard")

    def action_toggle_pane(self, pane: str) -> None:
        if pane not in PANES:
            return
        if self.narrow and pane in layout.TABBED:  # a tab: its number shows it, again goes back
            self.show_tab("scratchpad" if self.tab == pane else pane)
            return
        widget = self.query_one(f"#{pane}")
        widget.set_class(not widget.has_class("-hidden"), "-hidden")
        shown = not widget.has_class("-hidden")
        self.query_one("#sidebar").set_class(
            all(self.query_one(f"#{name}").has_class("-hidden") for name in ("tools", "memory", "guards")),
            "-hidden")
        self.say(f"{pane} pane {'shown' if shown else 'hidden'}")

    def show_tab(self, pane: str) -> None:
        """On a narrow terminal, show ``pane`` in the column the tabs share."""
        self.tab = pane
        layout.set_tab_classes(self.query_one("#main"), self.narrow, pane)
        tabs = self.query_one(PaneTabs)
        if tabs.active != f"tab-{pane}":
            tabs.active = f"tab-{pane}"

    @on(PaneTabs.TabActivated, "#pane-tabs")
    def tab_activated(self, event: PaneTabs.TabActivated) -> None:
        pane = (event.tab.id or "").removeprefix("tab-")
        if pane in layout.TABBED and pane != self.tab:
            self.show_tab(pane)

    def on_resize(self, event: events.Resize) -> None:
        self.fit_width(event.size.width)

    def fit_width(self, width: int) -> None:
        narrow = layout.is_narrow(width)
        if narrow == self.narrow:
            return
        self.narrow = narrow
        sidebar = self.query_one("#sidebar")
        # The sidebar's own width (< and >) applies beside the scratchpad, not as a tab.
        sidebar.styles.width = None if narrow else self._widths["sidebar"]
        self.show_tab(self.tab if narrow else "scratchpad")

    def action_resize_sidebar(self, delta: int) -> None:
        low, _, high = SIDEBAR_WIDTH
        width = max(low, min(high, self._widths["sidebar"] + delta))
        self._widths["sidebar"] = width
        if self.narrow:
            self.say("the sidebar is a tab on a terminal this narrow: 2, 3, 4 show its panes", "yellow")
            return
        self.query_one("#sidebar").styles.width = width

    def action_toggle_fold(self) -> None:
        folded = self.query_one(Scratchpad).toggle_fold()
        self.say("long observations folded" if folded else "long observations shown in full")

    def action_toggle_prompt(self) -> None:
        shown = self.query_one(Scratchpad).toggle_prompt_view()
        self.say("the prompt the policy saw at this step" if shown else "the transcript")

    # --- command palette -----------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for command in commands.COMMANDS:
            title = f"{command.title} ({shown_keys(command, self.settings.keymap)})"
            yield SystemCommand(title, command.help, partial(self.run_action, command.action))
        yield from super().get_system_commands(screen)
