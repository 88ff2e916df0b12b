"""One registry of the debugger's commands. It feeds the key bindings (with ids, so keys
can be remapped), the footer, the help screen and the command palette."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class Command:
    id: str  # the binding id (for keymaps)
    keys: str  # Textual key names, comma-separated
    action: str  # the app action it runs
    title: str  # short: footer and palette
    help: str  # one line: help screen and palette
    group: str
    footer: bool = False
    key_display: str | None = None
    scope: str = "app"  # "app": the debugger's screen; "diff": the split view of two runs

    @property
    def shown_keys(self) -> str:
        if self.key_display:
            return self.key_display
        return " / ".join(key_name(key) for key in self.keys.split(","))


def key_name(key: str) -> str:
    """A Textual key name as a user types it (question_mark is ?)."""
    names = {"question_mark": "?", "slash": "/", "escape": "Esc", "home": "Home", "end": "End",
             "less_than_sign": "<", "greater_than_sign": ">", "full_stop": ".", "comma": ",",
             "left_square_bracket": "[", "right_square_bracket": "]",
             "left_curly_bracket": "{", "right_curly_bracket": "}", "enter": "Enter", "tab": "Tab", "delete": "Del",
             "pageup": "PgUp", "pagedown": "PgDn", "up": "↑", "down": "↓"}
    return names.get(key, key)


COMMANDS: tuple[Command, ...] = (
    # Help and Quit first: the footer shows them even on a narrow terminal.
    Command("app.help", "question_mark", "help", "Help", "this help: every key, the filter language", "App", True, "?"),
    Command("app.quit", "q", "quit", "Quit", "quit agentdbg", "App", True),
    Command("step.forward", "n", "step_forward", "Step", "step forward one step (runs a live plan one step; at the newest step of a run being written, waits for the next)", "Stepping", True),
    Command("step.back", "p,N", "step_back", "Back", "step back one step (exact: the state is rebuilt from events)", "Stepping", True, "p / N"),
    Command("step.continue", "c", "continue_forward", "Continue", "continue to the next breakpoint or automatic break (in a run being written: waits for one in new steps)", "Stepping", True),
    Command("step.reverse_continue", "C", "continue_back", "Rev-continue", "reverse-continue to the previous breakpoint", "Stepping", True),
    Command("step.cancel", "escape", "cancel", "Cancel", "cancel a continue or a search in progress, or stop waiting for new steps", "Stepping"),
    Command("step.goto", "g", "goto", "Go to", "go to a step by number", "Stepping", True),
    Command("step.first", "home", "first_step", "First", "go to the start of the run", "Stepping"),
    Command("step.last", "end", "last_step", "Last", "go to the last step reached so far (c runs a live plan on); a run being written: follow its newest step", "Stepping"),
    Command("step.fork", "E", "fork", "Fork", "fork at this step: edit its thought, action or observation and run the rest again as a new run (r switches between them)", "Stepping"),
    Command("break.toggle", "b", "toggle_breakpoint", "Break", "toggle a breakpoint on the current step", "Breakpoints", True),
    Command("break.manager", "B", "breakpoints", "Breakpoints", "breakpoint manager: tool, step and filter breakpoints, automatic breaks", "Breakpoints", True),
    Command("search.find", "slash", "search", "Search", "search the transcript (regular expression)", "Search", True),
    Command("search.next", "full_stop", "search_next", "Next match", "go to the next match of the last search", "Search"),
    Command("search.previous", "comma", "search_previous", "Previous match", "go to the previous match of the last search", "Search"),
    Command("file.open", "o", "open_file", "Open", "open a plan, a trace or a run saved by another agent stack", "Files"),
    Command("file.write", "w", "write_trace", "Write", "write the current run to a trace file", "Files"),
    Command("file.runs", "r", "switch_run", "Runs", "the runs of this file: outcome, verdict, steps, errors, repeats, tokens; sort, filter, open one", "Files"),
    Command("file.diff", "D", "diff", "Diff", "compare this run with another run of the file or another file: aligned steps side by side, differences marked", "Files"),
    Command("file.next_failing", "right_square_bracket", "next_failing_run(1)", "Next failing run", "go to the next failing run (an error, a guard stopped it, or judged wrong), at its first failing step", "Files"),
    Command("file.previous_failing", "left_square_bracket", "next_failing_run(-1)", "Previous failing run", "go to the previous failing run, at its first failing step", "Files"),
    Command("view.timeline", "1", "toggle_pane('timeline')", "Timeline", "show or hide the timeline", "View"),
    Command("view.tools", "2", "toggle_pane('tools')", "Tools pane", "show or hide the tool registry", "View"),
    Command("view.memory", "3", "toggle_pane('memory')", "Memory pane", "show or hide the memory tiers", "View"),
    Command("view.guards", "4", "toggle_pane('guards')", "Guards pane", "show or hide the guards", "View"),
    Command("view.narrower", "less_than_sign", "resize_sidebar(-4)", "Narrower sidebar", "make the sidebar narrower", "View"),
    Command("view.wider", "greater_than_sign", "resize_sidebar(4)", "Wider sidebar", "make the sidebar wider", "View"),
    Command("view.filter", "f", "view_filter", "View filter", "show only the steps matching a filter expression (~error, ~tool search); n / p move between them; an empty filter shows every step", "View"),
    Command("view.fold", "z", "toggle_fold", "Fold", "fold or unfold long observations in the scratchpad", "View"),
    Command("view.prompt", "v", "toggle_prompt", "Prompt", "show the exact prompt the policy saw at this step (with memory: summary, recall, recent turns)", "View"),
    Command("view.what_if", "W", "what_if", "What if", "what if: other guard settings for this run, where they would have stopped it (re-scored, not run again), and a jump there", "View"),
    Command("view.log", "e", "show_log", "Log", "the log: every stop and break with its full reason (Enter goes there), and the problems found reading the file", "View"),
    Command("copy.step", "y", "copy_step", "Copy", "copy the current step's transcript to the clipboard (with the tools, memory or guards pane focused: that pane's text; in the prompt view: the prompt)", "Copy"),
    Command("copy.json", "Y", "copy_step_json", "Copy JSON", "copy the current step's events to the clipboard as JSON, as a trace holds them", "Copy"),
    Command("view.theme", "t", "toggle_theme", "Theme", "switch between the dark and the light theme (remembered for next time)", "View"),
    Command("live.attach", "a", "attach", "Attach", "detach from the agent recording this trace (a paused agent goes on), or attach to it again", "Live"),
)

# The split view of two runs (D): its own keys, one cursor for both sides.
DIFF_COMMANDS: tuple[Command, ...] = (
    Command("diff.down", "down,j,n", "row(1)", "Down", "next row: both sides move together", "Diff", key_display="↓ / j / n", scope="diff"),
    Command("diff.up", "up,k,p", "row(-1)", "Up", "previous row", "Diff", key_display="↑ / k / p", scope="diff"),
    Command("diff.next", "right_curly_bracket", "difference(True)", "Next diff", "next difference: the first row of the next stretch that differs", "Diff", True, scope="diff"),
    Command("diff.previous", "left_curly_bracket", "difference(False)", "Prev diff", "previous difference", "Diff", True, scope="diff"),
    Command("diff.page_down", "pagedown", "page(1)", "Page down", "a page of rows down", "Diff", scope="diff"),
    Command("diff.page_up", "pageup", "page(-1)", "Page up", "a page of rows up", "Diff", scope="diff"),
    Command("diff.first", "home", "first_row", "First row", "the first row", "Diff", scope="diff"),
    Command("diff.last", "end", "last_row", "Last row", "the last row", "Diff", scope="diff"),
    Command("diff.side", "s", "other_side", "Other side", "a narrow terminal shows one run at a time: show the other", "Diff", True, scope="diff"),
    Command("diff.go", "enter", "go_there", "Go there", "close the split view at this step of A (the debugger's run)", "Diff", True, scope="diff"),
    Command("diff.help", "question_mark", "help", "Help", "the help screen (every key)", "Diff", key_display="?", scope="diff"),
    Command("diff.close", "escape,D,q", "close", "Close", "close the split view", "Diff", True, "Esc", scope="diff"),
)

GROUPS = ("Stepping", "Breakpoints", "Search", "Files", "Copy", "View", "App", "Live", "Diff")


def bindings(scope: str = "app", namespace: str = "") -> list[Binding]:
    """The bindings of ``scope``'s commands; ``namespace`` (``"screen."``) lets a widget
    bind its screen's commands ahead of its own keys."""
    return [
        Binding(command.keys, namespace + command.action, command.title, show=command.footer,
                key_display=command.key_display, id=command.id)
        for command in (*COMMANDS, *DIFF_COMMANDS) if command.scope == scope
    ]


def by_action(action: str) -> Command:
    for command in COMMANDS:
        if command.action == action:
            return command
    raise KeyError(action)
