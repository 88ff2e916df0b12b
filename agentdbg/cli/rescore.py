"""``agentdbg rescore FILE... --repeat 2``: where other guards would have stopped recorded
runs, what that would have saved, and at what cost, without running anything again.

Each run's steps are folded through the engine's own guards (``agentdbg.debugger.rescore``);
its verdict says whether a stop was good (a wrong or failed run) or false (a correct one).
The table lists the runs the guards change (``--all``: every run), then the trade-off:
runs stopped, wrong runs caught, correct runs cut, steps and tokens saved. ``--sweep
repeat=2..5`` re-scores under each value at once, one row of the trade-off per value.

Runs are read one at a time and printed as they are re-scored: memory stays bounded on
files of many runs. ``--json`` streams one object, its keys stable (docs/rescore.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from rich.console import Console
from rich.text import Text

from agentdbg.cli import render
from agentdbg.debugger.rescore import STOPS, GuardSettings, Rescore, Totals, rescore_run
from agentdbg.engine.verdicts import outcome_with_verdict
from agentdbg.text import one_line

GUARD_FLAGS = {"max_steps": "--max-steps", "repeat": "--repeat", "max_errors": "--max-errors",
               "token_budget": "--token-budget"}
SWEEPABLE = {"repeat": "repeat", "max-steps": "max_steps", "max-errors": "max_errors", "token-budget": "token_budget"}
MAX_SWEEP_VALUES = 50
EFFECT_LABELS = {"good_stop": ("good stop", "bold green"), "false_stop": ("FALSE STOP", "bold red"),
                 "ungraded_stop": ("ungraded stop", "bold yellow"), "same_stop": ("same stop", "dim"),
                 "runs_on": ("runs on", "yellow"), "let_through": ("let through", "dim")}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    render.add_input_arguments(parser, several=True)
    guards = parser.add_argument_group("guards to re-score with (those not given are off)")
    guards.add_argument("--max-steps", type=int, metavar="N", help="stop after N steps without an answer")
    guards.add_argument("--repeat", type=int, metavar="K",
                        help="the repetition brake: stop when an earlier action comes back the K-th time "
                             "(with --consecutive: K times in a row; default 3)")
    guards.add_argument("--consecutive", action="store_true",
                        help="count repeats in a row only (for tools whose result changes between calls)")
    guards.add_argument("--max-errors", type=int, metavar="E", help="stop after E error observations in a row")
    guards.add_argument("--token-budget", type=int, metavar="T", help="stop once the run has used more than T tokens")
    parser.add_argument("--sweep", metavar="NAME=VALUES",
                        help="re-score under each value of one guard, e.g. repeat=2..5, max-steps=3,5,8 "
                             f"(NAME: {', '.join(SWEEPABLE)}); one trade-off row per value")
    parser.add_argument("--all", action="store_true", help="list every run, not only those the guards change")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


# -- arguments ------------------------------------------------------------------------------


def base_settings(args: argparse.Namespace) -> GuardSettings:
    given = {name: getattr(args, name) for name in GUARD_FLAGS if getattr(args, name) is not None}
    for name, value in given.items():  # each flag judged alone, so the message names it
        try:
            GuardSettings(**{name: value, "consecutive": args.consecutive and name == "repeat"})
        except ValueError as exc:
            raise render.InputError(f"{GUARD_FLAGS[name]} {value}: {exc}") from None
    return GuardSettings(consecutive=args.consecutive, **given)


def parse_sweep(text: str) -> tuple[str, list[int]]:
    """``repeat=2..5`` -> ("repeat", [2, 3, 4, 5]); values may also be listed: ``3,5,8``."""
    name, equals, values = text.partition("=")
    name = name.strip().lower().replace("_", "-")
    usage = f"NAME=VALUES, NAME one of {', '.join(SWEEPABLE)}, e.g. repeat=2..5 or max-steps=3,5,8"
    if not equals or name not in SWEEPABLE:
        raise render.InputError(f"--sweep {text}: give {usage}")
    found: list[int] = []
    for part in values.split(","):
        low, dots, high = part.strip().partition("..")
        try:
            first = int(low)
            last = int(high) if dots else first
        except ValueError:
            raise render.InputError(f"--sweep {text}: {part.strip()!r} is not a whole number or a range A..B; "
                                    f"give {usage}") from None
        if last < first:
            raise render.InputError(f"--sweep {text}: the range {part.strip()} runs backwards")
        if last - first >= MAX_SWEEP_VALUES:
            raise render.InputError(f"--sweep {text}: more than {MAX_SWEEP_VALUES} values")
        found.extend(value for value in range(first, last + 1) if value not in found)
    if len(found) > MAX_SWEEP_VALUES:
        raise render.InputError(f"--sweep {text}: more than {MAX_SWEEP_VALUES} values")
    return name, found


def settings_list(args: argparse.Namespace) -> tuple[list[GuardSettings], tuple[str, list[int]] | None]:
    """The settings to re-score with (one, or one per sweep value) and the sweep."""
    base = base_settings(args)
    if args.sweep is None:
        if base == GuardSettings():
            raise render.InputError("no guard to re-score with: give --repeat K, --consecutive, --max-steps N, "
                                    "--max-errors E, --token-budget T, or --sweep NAME=VALUES")
        return [base], None
    name, values = parse_sweep(args.sweep)
    field = SWEEPABLE[name]
    if getattr(args, field) is not None:
        raise render.InputError(f"--sweep {name} and {GUARD_FLAGS[field]} both given: the sweep sets it")
    chosen = []
    for value in values:
        try:
            chosen.append(dataclasses.replace(base, **{field: value}))
        except ValueError as exc:
            raise render.InputError(f"--sweep {name}={value}: {exc}") from None
    return chosen, (name, values)


# -- the command ----------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    try:
        settings, sweep = settings_list(args)
        if args.max_runs is not None and args.max_runs < 0:
            raise render.InputError(f"--max-runs {args.max_runs}: give a number of runs, or 0 for no limit")
        if args.run is not None and args.run < 1:
            raise render.InputError(f"--run {args.run}: runs are numbered from 1")
    except render.InputError as exc:
        return render.fail("rescore", str(exc))
    report: Report = JsonReport(settings, sweep, args) if args.json else TextReport(settings, sweep, args)
    code = 0
    try:
        report.start()
        for path in args.files:
            if not rescore_file(path, settings, args, report):
                code = 2
        report.finish()
    except BrokenPipeError:
        render.quiet_broken_pipe()
    return code


def rescore_file(path: str, settings: list[GuardSettings], args: argparse.Namespace, report: Report) -> bool:
    """Re-score every run of ``path``, reporting each; False when the file could not be used."""
    try:
        document = render.open_input(argparse.Namespace(**{**vars(args), "file": path}))
    except render.InputError as exc:
        report.file_failed(path, str(exc))
        return False
    read = 0
    try:
        report.file_opened(document)
        for number, run in render.iter_runs(document, args.run, args.max_runs):
            getattr(run, "wait", lambda: None)()  # a file's run: its whole index, and so its end
            results = rescore_run(run, settings, records=render.iter_records(run))
            report.run(document, number, run, results)
            read += 1
        render.wait_for_index(document)
        if not read:
            raise render.no_runs(document)
    except render.InputError as exc:
        report.file_failed(path, str(exc), document)
        return False
    finally:
        document.close()
    report.file_done(document, read)
    return True


def run_entry(document: Any, number: int, run: Any, results: list[Rescore]) -> dict[str, Any]:
    end = run.end
    first = results[0]
    return {"file": document.path, "run": number, "name": run.info.name or run.info.task,
            "steps": first.steps, "tokens": first.tokens, "outcome": render.run_outcome(run),
            "answer": end.answer if end is not None else None,
            "verdict": render.verdict_dict(render.run_verdict(run)), "judged": first.judged}


class Report:
    """Where the results go as they come: text or JSON."""

    def __init__(self, settings: list[GuardSettings], sweep: tuple[str, list[int]] | None, args: argparse.Namespace):
        self.settings = settings
        self.sweep = sweep
        self.show_all = args.all
        self.totals = [Totals() for _ in settings]
        self.files: list[dict[str, Any]] = []

    def labels(self) -> list[str]:
        if self.sweep is None:
            return [self.settings[0].describe()]
        return [f"{value:,}" for value in self.sweep[1]]

    def shown(self, results: list[Rescore]) -> bool:
        return self.show_all or any(result.changed for result in results)

    def start(self) -> None: ...

    def file_opened(self, document: Any) -> None: ...

    def run(self, document: Any, number: int, run: Any, results: list[Rescore]) -> None:
        for totals, result in zip(self.totals, results, strict=True):
            totals.add(result)

    def file_failed(self, path: str, message: str, document: Any = None) -> None:
        self.files.append({"path": path, "kind": getattr(document, "kind", None), "runs": 0,
                           "problems": [str(p) for p in getattr(document, "problems", ())], "error": message})

    def file_done(self, document: Any, read: int) -> None:
        self.files.append({"path": document.path, "kind": document.kind, "runs": read,
                           "problems": [str(p) for p in document.problems], "error": None})

    def finish(self) -> None: ...


class JsonReport(Report):
    """One JSON object, written as the runs come: ``{"guards" or "sweep", "runs": [...],
    "totals" or "rows", "files"}``."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.out = sys.stdout
        self.first = True

    def start(self) -> None:
        if self.sweep is None:
            head = {"guards": self.settings[0].to_dict()}
        else:
            head = {"sweep": {"name": self.sweep[0], "values": self.sweep[1]}}
        self.out.write(render.dumps(head)[:-1] + ', "runs": [')

    def run(self, document: Any, number: int, run: Any, results: list[Rescore]) -> None:
        super().run(document, number, run, results)
        if not self.shown(results):
            return
        entry = run_entry(document, number, run, results)
        if self.sweep is None:
            entry.update(results[0].to_dict())
        else:
            entry["results"] = [{"value": value, **result.to_dict()} for value, result in zip(self.sweep[1], results, strict=True)]
        self.out.write(("" if self.first else ", ") + render.dumps(entry))
        self.first = False

    def finish(self) -> None:
        if self.sweep is None:
            tail = {"totals": self.totals[0].to_dict()}
        else:
            tail = {"rows": [{"value": value, "guards": settings.to_dict(), "totals": totals.to_dict()}
                             for value, settings, totals in zip(self.sweep[1], self.settings, self.totals, strict=True)]}
        tail["files"] = self.files
        self.out.write("], " + render.dumps(tail)[1:] + "\n")
        self.out.flush()

    def file_failed(self, path: str, message: str, document: Any = None) -> None:
        super().file_failed(path, message, document)
        render.fail("rescore", message)


class TextReport(Report):
    def __init__(self, *args: Any):
        super().__init__(*args)
        self.console: Console = render.make_console()
        self.several_files = len(args[2].files) > 1
        self.titled: str | None = None  # the file whose name was printed last
        self.listed = 0

    def emit(self, text: Text) -> None:
        render.emit(self.console, text)

    def start(self) -> None:
        line = Text("rescore", style="bold")
        if self.sweep is None:
            line.append(f": {self.settings[0].describe()}")
        else:
            fixed = dataclasses.replace(self.settings[0], **{SWEEPABLE[self.sweep[0]]: None})
            line.append(f": {self.sweep[0]} = {_values_text(self.sweep[1])}")
            if fixed != GuardSettings():
                line.append(f", with {fixed.describe()}")
        line.append(" (over the recorded steps: nothing is run again)\n", style="dim")
        self.emit(line)

    def run(self, document: Any, number: int, run: Any, results: list[Rescore]) -> None:
        super().run(document, number, run, results)
        if not self.shown(results):
            return
        if self.several_files and self.titled != document.path:
            self.titled = document.path
            self.emit(Text(f"\n{one_line(document.path, 300)}\n", style="bold"))
        if not self.listed and self.sweep is None:
            self.emit(Text(f"{'run':>5}  {'effect':<13} {'stops at':<17} {'guard':<13} {'saves':<22} was\n",
                           style="dim"))
        elif not self.listed:
            self.emit(Text(f"{'run':>5}  how it ended · steps: what each value would do\n", style="dim"))
        self.listed += 1
        if self.sweep is None:
            self.emit(self._row(number, run, results[0]))
        else:
            self.emit(self._sweep_row(number, run, results))

    def _was(self, run: Any, number: int) -> Text:
        verdict = render.run_verdict(run)
        was = Text(outcome_with_verdict(one_line(render.run_outcome(run), 60), verdict),
                   style=render.verdict_style(verdict) if verdict is not None else "")
        was.append(f"  {render.run_title(run, number)}", style="magenta")
        return was

    def _row(self, number: int, run: Any, result: Rescore) -> Text:
        word, style = EFFECT_LABELS[result.effect]
        line = Text(f"{number:>5}  ")
        line.append(f"{word:<13}", style=style)
        stop = result.stop
        where = f"step {stop.step:,} of {result.steps:,}" if stop is not None else "—"
        line.append(f" {where:<17} {(stop.guard if stop is not None else '—'):<13} ")
        saves = render.plural(result.steps_saved, "step") if result.changed else "—"
        if result.changed and result.tokens:
            saves += f", {result.tokens_saved:,} tok"
        line.append(f"{saves:<22} ")
        line.append_text(self._was(run, number))
        line.append("\n")
        if stop is not None and result.effect != "let_through":
            refused = " (its answer refused)" if stop.before_action and result.changed and not result.steps_saved else ""
            line.append(f"{'':7}{one_line(stop.message, 300)}{refused}\n", style="dim")
        elif result.effect == "runs_on":
            line.append(f"{'':7}stopped by its own guard at its last step; these guards would let it go on\n",
                        style="dim")
        return line

    def _sweep_row(self, number: int, run: Any, results: list[Rescore]) -> Text:
        """``run 9 · answered, correct  question 1557 · 4 steps: FALSE STOP under max-steps=1
        (step 1), 2 (step 2)``: a run's verdict makes every stop of it the same kind."""
        line = Text(f"{number:>5}  ", style="bold")
        line.append_text(self._was(run, number))
        line.append(f" · {render.plural(results[0].steps, 'step')}")
        for effects in (STOPS, ("same_stop", "runs_on")):
            chosen = [(value, result) for value, result in zip(self.sweep[1], results, strict=True) if result.effect in effects]
            for effect in dict.fromkeys(result.effect for _, result in chosen):
                word, style = EFFECT_LABELS[effect]
                line.append(": " if effects is STOPS else "; ")
                line.append(word, style=style)
                line.append(f" under {self.sweep[0]}=")
                line.append(", ".join(f"{value}" + (f" (step {result.stop.step:,})" if result.stop else "")
                                      for value, result in chosen if result.effect == effect))
        if not any(result.effect in STOPS + ("same_stop", "runs_on") for result in results):
            line.append(": let through under every value", style="dim")
        line.append("\n")
        return line

    def file_failed(self, path: str, message: str, document: Any = None) -> None:
        super().file_failed(path, message, document)
        sys.stdout.flush()
        render.fail("rescore", message)
        if document is not None:
            render.print_problems(document.problems, document.path, "rescore")

    def file_done(self, document: Any, read: int) -> None:
        super().file_done(document, read)
        sys.stdout.flush()
        render.print_problems(document.problems, document.path, "rescore")

    def finish(self) -> None:
        totals = self.totals[0]
        if not totals.runs:
            return
        if not self.listed:
            self.emit(Text("no run is changed by these guards (--all lists every run)\n", style="dim"))
        self.emit(Text(f"\ntrade-off over {render.plural(totals.runs, 'run')}"
                       f"{' in ' + render.plural(sum(1 for f in self.files if f['runs']), 'file') if self.several_files else ''} "
                       f"({_judged_text(totals)}; {render.plural(totals.steps, 'step')}"
                       f"{'' if totals.runs_with_tokens else '; no token usage recorded'})\n", style="bold"))
        self.emit(trade_off_table(self.labels(), self.totals, self.sweep[0] if self.sweep else "guards"))
        self.emit(_notes(self.labels(), self.totals, self.sweep[0] if self.sweep else ""))
        sys.stdout.flush()


def _values_text(values: list[int]) -> str:
    if len(values) > 2 and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}..{values[-1]}"
    return ", ".join(str(v) for v in values)


def _judged_text(totals: Totals) -> str:
    parts = [f"{totals.judged[k]:,} {k}" for k in ("wrong", "failed", "correct", "ungraded") if totals.judged[k]]
    return ", ".join(parts) or "none judged"


def _share(part: int, whole: int) -> str:
    return f"{part:,} of {whole:,}" + (f" ({100 * part / whole:.0f}%)" if whole else "")


def trade_off_table(labels: list[str], all_totals: list[Totals], heading: str) -> Text:
    """One row per setting: runs stopped, wrong or failed runs caught, correct runs cut,
    steps and tokens saved."""
    rows = [[heading, "stopped", "wrong/failed stopped", "correct cut", "ungraded stopped", "steps saved",
             "tokens saved"]]
    for label, t in zip(labels, all_totals, strict=True):
        bad = t.judged["wrong"] + t.judged["failed"]
        steps = f"{t.steps_saved:,} ({100 * t.steps_saved / t.steps:.1f}%)" if t.steps else "0"
        tokens = (f"{t.tokens_saved:,} ({100 * t.tokens_saved / t.tokens:.1f}%)" if t.tokens else "—")
        rows.append([label, f"{t.stopped:,}", _share(t.effects["good_stop"], bad),
                     _share(t.effects["false_stop"], t.judged["correct"]), f"{t.effects['ungraded_stop']:,}",
                     steps, tokens])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = Text()
    for index, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        out.append("  ".join(cells).rstrip() + "\n", style="dim" if index == 0 else "")
    return out


def _notes(labels: list[str], all_totals: list[Totals], swept: str) -> Text:
    """What the table leaves out: runs stopped where they ended anyway, runs that would run
    on past their recording."""
    out = Text()
    for label, t in zip(labels, all_totals, strict=True):
        notes = []
        if t.effects["same_stop"]:
            notes.append(f"{render.plural(t.effects['same_stop'], 'run')} stopped where it ended anyway")
        if t.effects["runs_on"]:
            notes.append(f"{render.plural(t.effects['runs_on'], 'run')} stopped by its own guards would run on "
                         "past its recording (unknown)")
        if notes:
            prefix = f"{swept}={label}: " if swept else ""
            out.append(f"{prefix}{'; '.join(notes)}\n", style="dim")
    return out

