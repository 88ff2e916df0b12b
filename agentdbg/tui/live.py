"""The screen's side of live debugging: a trace followed as it is written, and the agent
attached to it (``agentdbg.attach``).

``LiveControl`` belongs to the app and keeps what only matters while a run is written:

- the header's note (``● live``, the step being written, ``finished``, the agent's state);
- ``End`` following the newest step (until the user moves away, or a break arrives);
- ``c`` at the newest step waiting for the next break among new steps, ``n`` there
  waiting for the next step (``Esc`` cancels, as does any other move);
- breaks on arriving steps (``agentdbg.debugger.live.LiveWatch``), and the agent: after
  each step it asks whether to go on; it is told to pause at a break (or after ``n``), and
  ``c`` / ``n`` resume it. ``a`` detaches (a paused agent goes on) and attaches again.

Threads: the file's index and the agent's link report from their own threads through
``LiveEvent`` messages; everything here runs on the app's thread.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.message import Message

from agentdbg.attach.debugger import AgentLink
from agentdbg.attach.protocol import ChannelError
from agentdbg.debugger.live import LiveWatch
from agentdbg.debugger.session import END_OF_INDEXED, Stop
from agentdbg.tui.safe import one_line

if TYPE_CHECKING:
    from agentdbg.tui.app import DebuggerApp

ATTACH_EVERY = 1.0  # seconds between looks for an agent's socket while the file is live


class LiveEvent(Message):
    """From another thread: ``kind`` is ``grew`` (the file), ``said`` (the agent sent
    ``data``), ``gone`` (the link closed, ``data`` why), ``attached`` (``data``: a link or
    an error message)."""

    def __init__(self, kind: str, data: Any = None, link: AgentLink | None = None) -> None:
        super().__init__()
        self.kind = kind
        self.data = data
        self.link = link


@dataclass
class Agent:
    """An attached agent, as far as the screen knows."""

    link: AgentLink
    request: int | None = None  # the step request it waits on while paused
    paused_at: int | None = None
    reason: str = ""
    answered: int = 0  # the newest step it was answered for
    single_step: bool = False  # pause at the next step whatever it holds (n)
    ended: bool = False  # its run has ended


class LiveControl:
    def __init__(self, app: DebuggerApp):
        self.app = app
        self.document: Any = None
        self.agent: Agent | None = None
        self._reset()

    def _reset(self) -> None:
        self.tail = False  # End: the cursor stays on the newest step
        self.waiting: str | None = None  # "break" (c) or "step" (n) at the newest step
        self.waiting_from = 0  # the step the cursor was on when the waiting began
        self.watches: dict[int, LiveWatch] = {}
        self.known_runs: int | None = None  # runs when the index first caught up
        self.counts: dict[int, int] = {}  # steps of each watched run at the last look
        self.user_detached = False
        self._next_attach = 0.0
        self._attaching = False
        self._told_error = ""
        self._shown_live = False  # the shown run was being written at the last look

    # --- the document ---------------------------------------------------------------------
    @property
    def followed(self) -> bool:
        return bool(getattr(self.document, "following", False)) or bool(getattr(self.document, "follow_stopped", None))

    def document_set(self, document: Any) -> None:
        self.detach(quiet=True)
        self._reset()
        self.document = document
        if not callable(getattr(document, "refresh", None)) or not getattr(document, "following", False):
            return
        self.try_attach()  # the app hears the file grow (its Grew message) and calls tick

    def close(self) -> None:
        self.detach(quiet=True)

    def run_shown(self) -> None:
        self.tail = False
        self._stop_waiting()

    # --- looking at the file ----------------------------------------------------------------
    def tick(self) -> None:
        """The file may have grown (the index said so, or the app's poll came round)."""
        document = self.document
        if document is None or not self.followed:
            return
        if self.known_runs is None:
            if not document.complete:
                return  # still indexing what was there on opening: not arrivals
            self.known_runs = len(document.runs)
            if self.known_runs:
                last = self.known_runs - 1
                self.watches[last] = LiveWatch(document.runs[last], self.app.breakpoints,
                                               document.runs[last].step_count)
                self.counts[last] = document.runs[last].step_count
        for index in range(self.known_runs, len(document.runs)):
            if index not in self.watches:
                self.watches[index] = LiveWatch(document.runs[index], self.app.breakpoints, 0)
                self.counts[index] = 0
        stops: dict[int, list[Stop]] = {}
        for index, watch in self.watches.items():
            found = watch.scan()
            if found:
                stops[index] = found
            if watch.behind:
                self.app.post_message(LiveEvent("grew"))  # a burst: the rest on the next turn
        self._grown()
        self._follow(stops.get(self.app.run_index, []))
        self._ended()
        if document.live and self.agent is None and not self.user_detached:
            self.try_attach()
        self.show_note()

    def _grown(self) -> None:
        """Steps that grew since they were drawn (the newest of a run being written) are
        drawn again."""
        from agentdbg.tui.widgets.scratchpad import Scratchpad
        from agentdbg.tui.widgets.timeline import Timeline

        index = self.app.run_index
        session = self.app.session
        if session is None or index not in self.watches:
            return
        count = session.run.step_count
        before = self.counts.get(index, count)
        self.counts[index] = count
        if getattr(session.run, "live", False) or count != before:
            first = max(1, min(before, count))
            self.app.query_one(Timeline).forget_from(first)
            self.app.query_one(Scratchpad).forget_from(first)

    def _ended(self) -> None:
        """The shown run stopped being written: its header and panes say how it ended."""
        session = self.app.session
        live = session is not None and bool(getattr(session.run, "live", False))
        if session is not None and self._shown_live and not live:
            self.app.show_cursor()
        self._shown_live = live

    def _follow(self, stops: list[Stop]) -> None:
        """Move the cursor as the mode says: to a break (waiting, or following the newest
        step), to the next step (waiting after n), along with the newest step (End)."""
        app = self.app
        session = app.session
        if session is None:
            return
        run = session.run
        watch = self.watches.get(app.run_index)
        if self.waiting == "break" and watch is not None:
            stop = watch.next_break(self.waiting_from)
            if stop is not None:
                self._stop_waiting()
                self.app.log_stop(stop)
                self._go(stop.step, f"{stop.message} (a new step)", "bold red")
            elif run.complete and not watch.behind:
                self._stop_waiting()
                self._go(run.step_count, f"end of run: no break in the new steps ({app.outcome()})", "bold")
        elif self.waiting == "step":
            if run.step_count > self.waiting_from:
                self._stop_waiting()
                self._go(self.waiting_from + 1, None)
            elif run.complete:
                self._stop_waiting()
                app.say(f"at the last step: the run ended ({app.outcome()})", "bold")
        elif self.tail:
            after = [stop for stop in stops if stop.step > session.cursor]
            if after:
                self.tail = False
                again = "; End follows the run again" if getattr(run, "live", False) else ""
                self._go(after[0].step, f"{after[0].message} (a new step{again})", "bold red")
            elif run.step_count > session.cursor:
                self._go(run.step_count, None)
        elif stops and self.agent is None:
            stop = stops[0]
            app.say(f"new step {stop.step} breaks: {'; '.join(stop.reasons)} (g {stop.step} goes there, "
                    "End follows the newest step)", "bold yellow")

    def _go(self, step: int, message: str | None, style: str = "") -> None:
        app = self.app
        session = app.session
        if session is None:
            return
        session.goto(step)
        app.show_cursor()
        if message is None:
            app.say(app.describe_step(), app.reason_style())
        else:
            app.say(message, style)

    # --- keys -----------------------------------------------------------------------------
    def _at_newest(self) -> bool:
        session = self.app.session
        return session is not None and session.cursor >= session.run.step_count and self._may_grow()

    def _may_grow(self) -> bool:
        session = self.app.session
        if session is None or not self.followed:
            return False
        return bool(getattr(session.run, "live", False)) or self._agent_paused_here()

    def _agent_paused_here(self) -> bool:
        agent = self.agent
        return agent is not None and agent.paused_at is not None and self.app.run_index == self._agent_run()

    def _agent_run(self) -> int:
        return len(self.document.runs) - 1 if self.document is not None else -1

    def on_continue(self) -> bool:
        """``c``: at the newest step of a run being written, wait for the next break
        (resuming a paused agent). True when handled here."""
        if self.waiting:
            self.app.say("already waiting for new steps: Esc stops waiting", "yellow")
            return True
        if not self._at_newest():
            return False
        self.wait_for_break()
        return True

    def after_continue(self, stop: Stop | None) -> bool:
        """A continue that reached the newest step of a run being written waits there."""
        if stop is None or stop.reasons != [END_OF_INDEXED] or not self._may_grow():
            return False
        self.wait_for_break()
        return True

    def wait_for_break(self) -> None:
        session = self.app.session
        watch = self.watches.get(self.app.run_index)
        if watch is not None and session is not None:
            stop = watch.next_break(session.cursor)
            if stop is not None:
                self.app.log_stop(stop)
                self._go(stop.step, f"{stop.message} (a new step)", "bold red")
                return
        resumed = self._resume(single=False)
        self.tail = False
        self.waiting, self.waiting_from = "break", session.cursor if session is not None else 0
        what = "the agent goes on; " if resumed else ""
        self.app.say(f"{what}waiting for the next break in new steps… (Esc stops waiting)", "bold cyan")
        self.show_note()

    def on_step_forward(self) -> bool:
        """``n`` at the newest step of a run being written: wait for the next step (an
        agent paused there runs one step and pauses again). True when handled here."""
        if self.waiting:
            self.app.say("already waiting for new steps: Esc stops waiting", "yellow")
            return True
        if not self._at_newest():
            return False
        resumed = self._resume(single=True)
        session = self.app.session
        self.waiting, self.waiting_from = "step", session.cursor
        what = "the agent runs one step; " if resumed else ""
        self.app.say(f"{what}waiting for step {session.cursor + 1}… (Esc stops waiting)", "bold cyan")
        self.show_note()
        return True

    def on_last_step(self) -> None:
        """``End``: on a run being written, the cursor stays on the newest step."""
        if self._may_grow():
            self.tail = True

    def moved(self, operation: str) -> None:
        """The user moved the cursor: following the newest step and waiting stop."""
        if operation != "end":
            self.tail = False
        if self.waiting:
            self._stop_waiting()
        if self.followed:
            self.show_note()

    def after_end(self) -> None:
        if self.tail:
            self.app.say(f"{self.app.describe_step()} · following the newest step (any move stops following)",
                         "bold cyan")

    def cancel(self) -> bool:
        """Esc: stop waiting for new steps. True when there was something to stop."""
        if not self.waiting:
            return False
        self._stop_waiting()
        agent = "; the agent runs on, and pauses at the next break" if self.agent is not None else ""
        self.app.say(f"stopped waiting: the cursor stays here{agent}", "yellow")
        self.show_note()
        return True

    def _stop_waiting(self) -> None:
        self.waiting = None

    # --- the agent ------------------------------------------------------------------------
    def try_attach(self) -> None:
        """Look for the agent's socket beside the trace, in a thread (connecting may wait)."""
        document = self.document
        now = time.monotonic()
        if (self.agent is not None or self._attaching or now < self._next_attach or document is None
                or not getattr(document, "following", False)):
            return
        self._next_attach = now + ATTACH_EVERY
        self._attaching = True
        post = self.app.post_message
        path = document.path

        def connect() -> None:
            holder: list[AgentLink] = []

            def said(message: dict) -> None:
                post(LiveEvent("said", message, holder[0] if holder else None))

            def gone(why: str) -> None:
                post(LiveEvent("gone", why, holder[0] if holder else None))

            try:
                link = AgentLink.connect(path, said, gone, start=False)
            except (ChannelError, OSError) as exc:
                post(LiveEvent("attached", str(exc)))
                return
            post(LiveEvent("attached", link))
            if link is not None:  # its messages come after it is known as attached
                holder.append(link)
                link.start()

        threading.Thread(target=connect, name="agentdbg attach", daemon=True).start()

    def handle(self, event: LiveEvent) -> None:
        if event.kind == "grew":
            self.tick()
        elif event.kind == "attached":
            self._attached(event.data)
        elif event.kind == "said":
            if self.agent is not None and event.link is self.agent.link:
                self._agent_said(event.data)
        elif event.kind == "gone":
            if self.agent is not None and event.link is self.agent.link:
                self._agent_gone(event.data)

    def _attached(self, result: AgentLink | str | None) -> None:
        self._attaching = False
        if isinstance(result, str):
            if result != self._told_error:
                self._told_error = result
                self.app.say(f"cannot attach to the agent: {one_line(result, 200)}", "yellow")
            return
        if result is None:  # no agent listens (yet): look again in a while
            self.app.set_timer(ATTACH_EVERY, self.try_attach)
            return
        if self.document is None or self.user_detached or self.agent is not None:
            result.detach()
            return
        self._told_error = ""
        told = result.hello.get("step")
        self.agent = Agent(result, answered=told if isinstance(told, int) and not isinstance(told, bool) else 0)
        pid = f" (pid {result.pid})" if result.pid else ""
        self.app.say(f"attached to the agent{pid}: it pauses at breaks; a detaches", "bold cyan")
        self.show_note()

    def _agent_said(self, message: dict) -> None:
        agent = self.agent
        kind = message.get("type")
        number = message.get("id") if isinstance(message.get("id"), int) else None
        if kind == "step":
            step = message.get("step")
            if not isinstance(step, int) or number is None:
                return
            if message.get("ended"):
                agent.ended = True
                self.document.refresh(settled=True)
                self.app.poll()
                return
            session = self.app.session
            at_edge = not self.waiting and not self.tail and (  # at the newest step the agent had told of
                session is None or session.cursor == 0 or session.cursor >= agent.answered)
            self.document.refresh(settled=True)  # the agent has flushed the step: read it now
            self.app.poll()
            index = self._agent_run()
            watch = self.watches.get(index)
            stop = watch.next_break(agent.answered, through=step) if watch is not None else None
            single = agent.single_step
            agent.answered = step
            if stop is None and not single:
                agent.link.answer(number, go=True)
                self.show_note()
                return
            reason = "; ".join(stop.reasons) if stop is not None else "one step (n)"
            agent.single_step = False
            agent.link.answer(number, go=False, reason=reason)
            agent.request, agent.paused_at, agent.reason = number, step, reason
            if at_edge and self.app.run_index == index:  # the user was at the edge of the run: show the pause
                self._go(step, None)
            if self.app.run_index == index and self.app.session is not None and self.app.session.cursor == step:
                self.app.say(f"agent paused at step {step} · c resumes, n runs one step, a detaches · {reason}",
                             "bold red" if stop is not None else "bold")
            elif self.app.run_index == index:
                self.app.say(f"agent paused at step {step} · g {step} goes there, c or n there resumes it · {reason}",
                             "bold red" if stop is not None else "bold")
            self.show_note()
        elif kind == "went_on":
            waited = message.get("waited")
            at = agent.paused_at
            agent.request = agent.paused_at = None
            seconds = f" {waited:.1f} s" if isinstance(waited, (int, float)) and not isinstance(waited, bool) else ""
            self.app.say(f"the agent waited{seconds} at step {at} and went on by itself (its pause_timeout)", "yellow")
            self.show_note()
        elif number is not None:  # a request this debugger does not know
            agent.link.unsupported(number)

    def _agent_gone(self, why: str) -> None:
        agent, self.agent = self.agent, None
        if agent is not None and not agent.ended and why != "detached":
            self.app.say(f"the agent is gone: {one_line(why, 200)}", "yellow")
        self._next_attach = time.monotonic() + ATTACH_EVERY
        self.show_note()

    def _resume(self, single: bool) -> bool:
        agent = self.agent
        if agent is None or agent.request is None or not self._agent_paused_here():
            return False
        agent.single_step = single
        agent.link.resume(agent.request)
        agent.request = agent.paused_at = None
        return True

    def detach(self, quiet: bool = False) -> None:
        agent, self.agent = self.agent, None
        if agent is not None:
            agent.link.detach()
        if not quiet:
            self.show_note()

    def toggle_attach(self) -> None:
        """``a``: detach from the agent (it goes on), or look for one to attach to."""
        if not self.followed:
            self.app.say("attaching is for a trace being recorded with attach=True (or record --attach)", "yellow")
            return
        if self.agent is not None:
            paused = self.agent.paused_at is not None
            self.user_detached = True
            self.detach()
            self.app.say("detached: the agent goes on" + (" from where it was paused" if paused else "") +
                         " (a attaches again)", "bold")
            return
        self.user_detached = False
        self._next_attach = 0.0
        self._told_error = ""
        if not self.document.live:
            self.app.say("the run is not being written: there is no agent to attach to", "yellow")
            return
        self.app.say("looking for the agent beside the trace…", "cyan")
        self.try_attach()

    # --- the header -----------------------------------------------------------------------
    def note(self) -> Text:
        document = self.document
        session = self.app.session
        if document is None or session is None or not self.followed:
            return Text()
        run = session.run
        text = Text()
        if getattr(run, "live", False):
            text.append("● live", style="bold green")
            pending = run.pending_record() if callable(getattr(run, "pending_record", None)) else None
            if pending is not None:
                doing = pending.call or pending.tool or ("answer" if pending.answer is not None else "")
                text.append(f" · step {pending.step} being written", style="green")
                if doing:
                    text.append(f": {one_line(doing, 40)}", style="green")
        elif stopped := getattr(document, "follow_stopped", None):
            text.append("not followed: " + ("truncated" if "truncated" in stopped else "replaced"), style="bold red")
        else:
            text.append("finished", style="bold")
        agent = self.agent
        if agent is not None and self.app.run_index == self._agent_run():
            if agent.paused_at is not None:
                text.append(f" · agent paused at step {agent.paused_at}", style="bold red")
            elif agent.ended:
                text.append(" · agent done", style="dim")
            else:
                text.append(" · agent running", style="bold cyan")
        if self.waiting:
            text.append(" · waiting", style="cyan")
        elif self.tail:
            text.append(" · following", style="cyan")
        return text

    def show_note(self) -> None:
        from agentdbg.tui.widgets.header import RunHeader

        try:
            self.app.query_one(RunHeader).set_note(self.note())
        except Exception:  # the screen is being taken down
            pass
