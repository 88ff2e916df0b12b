"""Run the fuzz/mutation corpus: every command on every case, the debugger on a sample.

    .venv/bin/python tests/fuzz/run.py                      # the full set (minutes)
    .venv/bin/python tests/fuzz/run.py --sample 200 --seed 1   # a deterministic subset
    .venv/bin/python tests/fuzz/run.py --only sidecar/ --all   # matching ids, every failure listed

Prints each distinct failure, then
``N cases tried / N command runs / N tracebacks / N hangs / N escape leaks``;
exits 1 when anything failed, 3 when the harness itself could not run a case.
See docs/hardening.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the fuzz package

from fuzz import corpus, runner  # noqa: E402

DEFAULT_TUI = 50  # sampled cases also opened in the debugger (besides the special files and sidecars)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run agentdbg's fuzz/mutation corpus.")
    parser.add_argument("--sample", type=int, metavar="N", help="run N cases drawn evenly from every category")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    parser.add_argument("--only", metavar="TEXT", action="append", default=[],
                        help="only cases whose id contains TEXT (repeatable)")
    parser.add_argument("--tui", type=int, metavar="N",
                        help=f"open N more sampled cases in the debugger (default {DEFAULT_TUI}, a tenth of a --sample)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="seconds (of CPU, or of sleeping) before a command counts as hung (x3 for big inputs)")
    parser.add_argument("--tui-timeout", type=float, default=30.0,
                        help="seconds the debugger may take to open the file, and then for each key")
    parser.add_argument("--nice", type=int, default=10, help="priority the workers lower themselves by")
    parser.add_argument("--list", action="store_true", help="list the selected case ids and stop")
    parser.add_argument("--all", action="store_true", help="also list every failure, one per line")
    parser.add_argument("--report", type=Path, metavar="FILE", help="write every failure as JSON to FILE")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (recorded traces)")
    parser.add_argument("--serve", action="store_true",
                        help="also send the hostile requests of fuzz/serve_cases.py to a real agentdbg serve")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(143))

    work = Path(tempfile.mkdtemp(prefix="agentdbg-fuzz-"))
    try:
        with runner.Pool(work, jobs=args.jobs, timeout=args.timeout, tui_timeout=args.tui_timeout,
                         nice=args.nice) as pool:
            cases = pool.prepare()
            if args.only:
                cases = [case for case in cases if any(text in case.id for text in args.only)]
            if args.sample is not None:
                cases = corpus.sample(cases, args.sample, args.seed)
            tui = _debugger_cases(cases, args)
            if args.list:
                for case in cases:
                    print(runner.visible(case.id) + ("  (+debugger)" if case.id in tui else ""))
                return 0
            print(f"{len(cases)} cases, {len(tui)} also in the debugger; {args.jobs} workers, "
                  f"{args.timeout:g} s limit", file=sys.stderr)
            report = pool.run(cases, tui=tui, progress=_progress)
            if args.serve:
                _attack_server(report, work, args.only)
    finally:
        if args.keep:
            print(f"work directory kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    for line in runner.failures(report, every=args.all):
        print(line)
    print()
    slowest = sorted(report.case_seconds.items(), key=lambda item: -item[1])[:5]
    print(f"{report.cases} cases in {report.seconds:.0f} s ({report.cpu_seconds:.0f} s of CPU in the commands); slowest: "
          + ", ".join(f"{case} {seconds:.1f} s" for case, seconds in slowest))
    print(runner.summary(report))
    if args.report:
        args.report.write_text(json.dumps({
            "summary": runner.summary(report), "cases": report.cases, "tried": report.tried,
            "failures": [{"case": f.case, "category": f.category, "input": f.input_kind, **f.finding.to_dict()}
                         for f in report.failures],
            "errors": report.errors}, indent=1, ensure_ascii=True) + "\n", encoding="utf-8")
    if report.errors:
        print(f"\nthe harness could not run {len(report.errors)} cases:", file=sys.stderr)
        for error in report.errors[:20]:
            print(f"  {runner.visible(error)}", file=sys.stderr)
        return 3
    return 1 if report.failures else 0


def _debugger_cases(cases: list, args: argparse.Namespace) -> set[str]:
    always = {case.id for case in cases if case.tui}
    count = args.tui if args.tui is not None else (DEFAULT_TUI if args.sample is None else max(1, args.sample // 10))
    others = [case for case in cases if not case.tui]
    return always | {case.id for case in corpus.sample(others, count, args.seed)}


def _attack_server(report: runner.Report, work: Path, only: list[str]) -> None:
    """The hostile requests (those whose id contains an --only text), counted as cases."""
    from fuzz import serve_cases

    requests = [request for request in serve_cases.cases() if not only or any(text in request.id for text in only)]
    folder = work / "served"
    folder.mkdir()
    for case, finding in serve_cases.attack(folder, requests):
        report.failures.append(runner.Failure(case, "serve", case.rsplit("=", 1)[0], finding))
    report.cases += len(requests)
    report.done += len(requests)
    report.tried += len(requests)


def _progress(report: runner.Report, total: int) -> None:
    print(f"[{report.seconds:4.0f} s] of {total}: {runner.summary(report)}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
