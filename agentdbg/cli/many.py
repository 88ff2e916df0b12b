"""``agentdbg check`` and ``agentdbg stats`` over many files and folders.

The files (``agentdbg.cli.walk``: folders walked, sorted by path) are read in parallel
processes (``-j N``, default one per CPU), each by the same per-file function the
one-file command uses; results come back in path order, so the output is the same
whatever the parallelism. A file found in a folder that agentdbg cannot open is skipped
with a note; a file named on the command line that cannot be opened is trouble (exit 2).

``check`` prints one line per failing run: the command that opens the debugger at its
first failing step, and why, after a ``#`` (the whole line can be pasted into a shell);
then a summary line. ``stats`` prints one line per file, then the totals.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from rich.text import Text

from agentdbg.cli import render, walk
from agentdbg.cli.terminal import terminal_stream
from agentdbg.text import one_line

# What a worker needs of the command's arguments (plain values, and the command's own
# per-file functions, passed by reference: they cross processes).
OPTIONS = ("run", "format", "allow_code", "allow_network", "max_runs", "approve", "fail_on", "max_report", "full")
MESSAGE_CHARS = 160  # a failing run's reason, on its line


def add_jobs_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                        help="files read at once, each in its own process (default: one per CPU)")


def is_many(args: argparse.Namespace) -> bool:
    """Several inputs, or a folder: the many-file driver. One file keeps the one-file output."""
    files = args.files
    return len(files) != 1 or os.path.isdir(files[0])


def job_count(args: argparse.Namespace) -> int:
    jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
    if jobs < 1:
        raise render.InputError(f"--jobs {jobs}: give 1 or more processes")
    return jobs


def parallel_map(work: Callable[[str, dict], dict], paths: list[str], options: dict, jobs: int) -> Iterator[dict]:
    """``work(path, options)`` for each path, in parallel processes, yielded in path order."""
    if jobs == 1 or len(paths) <= 1:
        for path in paths:
            yield work(path, options)
        return
    workers = min(jobs, len(paths))
    chunk = max(1, min(16, len(paths) // (workers * 4)))  # fewer round trips, still balanced
    with ProcessPoolExecutor(max_workers=workers) as pool:
        try:
            yield from pool.map(work, paths, [options] * len(paths), chunksize=chunk)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


class NotOpened(Exception):
    """The file cannot be opened as runs (found in a folder: skipped, not trouble)."""


def _open(path: str, options: dict) -> Any:
    plain = {name: value for name, value in options.items() if name in OPTIONS}
    args = argparse.Namespace(file=path, follow=False, **plain)
    try:
        return args, render.open_input(args)
    except render.InputError as exc:
        raise NotOpened(str(exc)) from None


def _guarded(work: Callable[[str, dict], dict], path: str, options: dict) -> dict:
    try:
        return work(path, options)
    except NotOpened as exc:
        return {"path": path, "status": "not opened", "message": str(exc)}
    except render.InputError as exc:  # opened, but not to be read as asked (--run 9 of 3 runs)
        return {"path": path, "status": "unreadable", "message": str(exc)}
    except Exception as exc:  # one bad file must not end the others' report
        return {"path": path, "status": "unreadable", "message": f"internal error: {type(exc).__name__}: {exc}"}


def _check_one(path: str, options: dict) -> dict:
    args, document = _open(path, options)
    try:
        result = options["check_document"](document, options["fail_on"], args)
    finally:
        document.close()
    return {"path": path, "status": "read", "result": result}


def _stats_one(path: str, options: dict) -> dict:
    args, document = _open(path, options)
    try:
        runs = [options["run_stats"](number, run, full=args.full)
                for number, run in render.iter_runs(document, args.run, args.max_runs)]
        render.wait_for_index(document)
        if not runs:
            raise render.no_runs(document)
    finally:
        document.close()
    return {"path": path, "status": "read",
            "result": {"path": path, "kind": document.kind, "runs": runs, "totals": options["totals"](runs),
                       "problems": [str(p) for p in document.problems]}}


def check_file(path: str, options: dict) -> dict:
    """One file's ``check`` result (in a worker process): read, or why it was not."""
    return _guarded(_check_one, path, options)


def stats_file(path: str, options: dict) -> dict:
    """One file's ``stats`` result (in a worker process): read, or why it was not."""
    return _guarded(_stats_one, path, options)


# -- the driver -------------------------------------------------------------------------------


def _options(args: argparse.Namespace, **extra: Any) -> dict:
    values = {name: getattr(args, name, None) for name in OPTIONS}
    values.update(extra)
    return values


def _read_all(command: str, args: argparse.Namespace, work, options: dict,
              on_result: Callable[[dict], None] | None = None) -> tuple[walk.Inputs, list[dict]]:
    """Every file's result, in path order; ``on_result`` is told each as it comes (so
    output starts before the last file is read)."""
    jobs = job_count(args)
    found = walk.collect(args.files)
    results = []
    for entry in parallel_map(work, found.files, options, jobs):
        if entry["status"] == "not opened":  # found in a folder: not a run agentdbg reads
            entry["status"] = "unreadable" if entry["path"] in found.named else "skipped"
        results.append(entry)
        if on_result is not None:
            on_result(entry)
    return found, results


def _say_skipped_and_trouble(command: str, found: walk.Inputs, results: list[dict]) -> tuple[list, list]:
    """Notes for files skipped, errors for files named that could not be read (stderr)."""
    out = terminal_stream(sys.stderr)
    skipped = list(found.skipped) + [(e["path"], e["message"]) for e in results if e["status"] == "skipped"]
    trouble = list(found.refused) + [(e["path"], e["message"]) for e in results if e["status"] == "unreadable"]
    for path, why in sorted(skipped):
        print(f"agentdbg {command}: note: {one_line(path, 300)}: skipped: "
              f"{one_line(short_reason(why, path), 300)}", file=out)
    for path, why in trouble:
        print(f"agentdbg {command}: error: {one_line(path, 300)}: {one_line(short_reason(why, path), 500)}", file=out)
    return sorted(skipped), trouble


def short_reason(message: str, path: str) -> str:
    """Open errors start with the file's name: said once on the line is enough; so does
    their first line (the formats tried are for one file's own command)."""
    prefix = f"{path}: "
    message = message[len(prefix):] if message.startswith(prefix) else message
    return message.split("\n", 1)[0].split(" Formats tried:", 1)[0]


def open_command(path: str, run: int | None, step: int | None, args: argparse.Namespace) -> str:
    """The command that opens the debugger on ``path`` at run ``run``, step ``step``."""
    words = ["agentdbg", path]
    if args.format:
        words += ["--format", args.format]
    for flag in ("allow_code", "allow_network"):
        if getattr(args, flag, False):
            words.append("--" + flag.replace("_", "-"))
    if args.approve:
        words += ["--approve", args.approve]
    if run is not None:
        words += ["--run", str(run)]
    if step is not None:
        words += ["--step", str(step)]
    return " ".join(shell_word(word) for word in words)


def shell_word(text: str) -> str:
    """``text`` as one shell word a person can paste: quoted as ``shlex.quote`` does, or,
    when it holds characters that are not printable (a newline, an escape, a bidi
    override, a byte that is not UTF-8), as bash's ``$'...'`` with those escaped: what
    is printed never holds a control character."""
    if text.isprintable():
        return shlex.quote(text)
    out = []
    for ch in text:
        code = ord(ch)
        if ch in "\\'":
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif 0xDC80 <= code <= 0xDCFF:  # a byte of the name that is not UTF-8 (surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "$'" + "".join(out) + "'"


def failing_runs(result: dict, args: argparse.Namespace) -> Iterator[dict]:
    """Each failing run of one file's check: where it first fails, why, and how to open it."""
    several = len(result["runs"]) > 1 or args.run is not None
    for entry in result["runs"]:
        if not entry["counts"]:
            continue
        failures = entry["failures"]
        at_steps = [f for f in failures if f["step"] is not None]
        first = min(at_steps, key=lambda f: f["step"]) if at_steps else (failures[0] if failures else None)
        step = first["step"] if first is not None and first["step"] is not None else (entry["steps"] or None)
        occurrences = sum(entry["counts"].values())
        if first is not None:
            where = f" at step {first['step']}" if first["step"] is not None else ""
            reason = f"{first['condition']}{where}: {first['message']}"
        else:
            reason = ", ".join(entry["counts"])
        yield {"path": result["path"], "run": entry["run"], "name": entry["name"], "step": step,
               "conditions": list(entry["counts"]), "occurrences": occurrences,
               "reason": reason, "command": open_command(result["path"], entry["run"] if several else None, step, args)}


def run_check(args: argparse.Namespace, names: list[str], check_document: Callable, either: Callable[[list[str]], str]) -> int:
    """``check`` over many files: ``check_document(document, names, args)`` is the one-file
    check, ``either(names)`` says the conditions in a sentence."""
    if args.follow:
        return render.fail("check", "--follow checks one file as it is written, not several")
    console = render.make_console()

    def show(entry: dict) -> None:  # each file's failing runs as soon as it is read, in path order
        if entry["status"] == "read" and not args.json:
            _print_failing(console, entry["result"], args)
            render.print_problems(entry["result"]["problems"], entry["path"], "check")

    try:
        found, results = _read_all("check", args, check_file,
                                   _options(args, fail_on=names, full=False, check_document=check_document), show)
    except render.InputError as exc:
        return render.fail("check", str(exc))
    except BrokenPipeError:
        render.quiet_broken_pipe()
        return 1
    checked = [e["result"] for e in results if e["status"] == "read"]
    failing = [run for result in checked for run in failing_runs(result, args)]
    damaged = [r for r in checked if "damaged" in r["failed"]]
    runs = sum(len(r["runs"]) for r in checked)
    steps = sum(run["steps"] for r in checked for run in r["runs"])
    counts: dict[str, int] = {}
    for result in checked:
        for name in result["failed"]:
            counts[name] = counts.get(name, 0) + (len(result["problems"]) if name == "damaged"
                                                  else sum(run["counts"].get(name, 0) for run in result["runs"]))
    counts = {name: counts[name] for name in names if name in counts}  # in --fail-on's order
    try:
        skipped, trouble = _say_skipped_and_trouble("check", found, results)
        ok = not failing and not damaged
        summary = {"files": len(checked), "runs": runs, "steps": steps, "failing_runs": len(failing),
                   "failing_files": len({r["path"] for r in failing} | {r["path"] for r in damaged}),
                   "occurrences": counts, "skipped": len(skipped), "unreadable": len(trouble)}
        if args.json:
            print(render.dumps({"fail_on": names, "ok": ok and not trouble, "summary": summary,
                                "failing": failing, "files": checked,
                                "skipped": [{"path": p, "why": w} for p, w in skipped],
                                "unreadable": [{"path": p, "why": w} for p, w in trouble]}), flush=True)
        else:
            _print_check_summary(summary, either(names))
    except BrokenPipeError:
        render.quiet_broken_pipe()
    if trouble or not checked:
        if not checked and not trouble:
            return render.fail("check", "no file agentdbg can read in " + ", ".join(args.files))
        return 2
    return 0 if ok else 1


def _print_failing(console: Any, result: dict, args: argparse.Namespace) -> None:
    """One file's failing runs, a line each (and a line for its damaged lines)."""
    for run in failing_runs(result, args):
        line = Text(run["command"], style="bold")
        more = f" (+{run['occurrences'] - 1:,} more)" if run["occurrences"] > 1 else ""
        name = f"{one_line(run['name'], 40)}: " if run["name"] else ""
        line.append(f"  # {name}{one_line(run['reason'], MESSAGE_CHARS)}{more}", style="dim")
        render.emit(console, line.append("\n"))
    if "damaged" in result["failed"]:
        line = Text(open_command(result["path"], None, None, args), style="bold")
        line.append(f"  # damaged: {render.plural(len(result['problems']), 'damaged line')}; e lists them", style="dim")
        render.emit(console, line.append("\n"))
    sys.stdout.flush()


def _print_check_summary(summary: dict, conditions: str) -> None:
    console = render.make_console()
    scope = (f"{render.plural(summary['runs'], 'run')} ({render.plural(summary['steps'], 'step')}) "
             f"in {render.plural(summary['files'], 'file')}")
    extra = ""
    if summary["skipped"]:
        extra += f"; {render.plural(summary['skipped'], 'file')} skipped"
    if summary["unreadable"]:
        extra += f"; {render.plural(summary['unreadable'], 'file')} could not be read"
    if summary["failing_runs"] or summary["occurrences"]:
        line = Text("FAIL", style="bold red")
        spread = ", ".join(f"{name} {count:,}" for name, count in summary["occurrences"].items())
        line.append(f": {render.plural(summary['failing_runs'], 'failing run')} in "
                    f"{summary['failing_files']:,} of {render.plural(summary['files'], 'file')} ({spread}); "
                    f"{scope} checked{extra}")
    else:  # nothing failed in what was read; what could not be read is not a pass
        if summary["unreadable"]:
            line = Text("incomplete", style="bold red")
        elif not summary["files"]:  # every file skipped: nothing passed
            line = Text("nothing checked", style="bold yellow")
        else:
            line = Text("ok", style="bold green")
        line.append(f": no {conditions} in {scope}{extra}")
    render.emit(console, line.append("\n"))
    sys.stdout.flush()


# -- stats ------------------------------------------------------------------------------------


def merge_totals(parts: list[dict]) -> dict:
    """The sum of several files' ``stats.totals``."""
    total: dict[str, Any] = {"runs": 0, "steps": 0, "outcomes": {}, "graded": 0, "correct": 0, "wrong": 0,
                             "errors": 0, "repeats": 0, "tokens": 0, "raw_records": 0}
    for part in parts:
        for key, value in part.items():
            if key == "outcomes":
                for outcome, count in value.items():
                    total["outcomes"][outcome] = total["outcomes"].get(outcome, 0) + count
            elif isinstance(value, int):
                total[key] = total.get(key, 0) + value
    return total


def run_stats(args: argparse.Namespace, run_stats: Callable, totals: Callable, totals_text: Callable[[dict], Text]) -> int:
    """``stats`` over many files: the one-file command's ``run_stats(number, run, full)``,
    ``totals(runs)`` and ``totals_text(totals)`` (its "total" line)."""
    console = render.make_console()

    def show(entry: dict) -> None:  # each file's line as soon as it is read, in path order
        if entry["status"] == "read" and not args.json:
            render.emit(console, _file_line(entry["result"], totals_text).append("\n"))
            render.print_problems(entry["result"]["problems"], entry["path"], "stats")
            sys.stdout.flush()

    try:
        found, results = _read_all("stats", args, stats_file, _options(args, fail_on=None, max_report=None,
                                                                            run_stats=run_stats, totals=totals), show)
    except render.InputError as exc:
        return render.fail("stats", str(exc))
    except BrokenPipeError:
        render.quiet_broken_pipe()
        return 0
    read = [e["result"] for e in results if e["status"] == "read"]
    summed = merge_totals([r["totals"] for r in read])
    try:
        skipped, trouble = _say_skipped_and_trouble("stats", found, results)
        if args.json:
            print(render.dumps({"files": read, "totals": dict(summed, files=len(read)),
                                "skipped": [{"path": p, "why": w} for p, w in skipped],
                                "unreadable": [{"path": p, "why": w} for p, w in trouble]}), flush=True)
        else:
            _print_stats_totals(console, len(read), summed, len(skipped), len(trouble), totals_text)
    except BrokenPipeError:
        render.quiet_broken_pipe()
    if trouble:
        return 2
    if not read:
        return render.fail("stats", "no file agentdbg can read in " + ", ".join(args.files))
    return 0


def _file_line(result: dict, totals_text: Callable[[dict], Text]) -> Text:
    line = Text(one_line(result["path"], 200), style="bold magenta")
    line.append_text(totals_text(result["totals"])[len("total"):])  # the same figures, the path for "total"
    return line


def _print_stats_totals(console: Any, files: int, totals: dict, skipped: int, unreadable: int,
                        totals_text: Callable[[dict], Text]) -> None:
    line = totals_text(totals)
    line.append(f" in {render.plural(files, 'file')}")
    if skipped:
        line.append(f"; {render.plural(skipped, 'file')} skipped")
    if unreadable:
        line.append(f"; {render.plural(unreadable, 'file')} could not be read", style="red")
    render.emit(console, line.append("\n"))
    sys.stdout.flush()
