"""``agentdbg show FILE``: a run's transcript, step by step; ``--step N``: one step and its
full derived state. Streams: a huge trace prints as it is read, never loaded whole."""

from __future__ import annotations

import argparse
import sys

from rich.text import Text

from agentdbg.cli import following, render
from agentdbg.model.prompt import prompt_at
from agentdbg.text import sanitize

PROMPT_STEPS = 200  # a prompt that is the whole transcript: its latest steps only


def add_arguments(parser: argparse.ArgumentParser) -> None:
    render.add_input_arguments(parser)
    parser.add_argument("--step", type=int, metavar="N", help="show step N with its full derived state (guards, tools, memory tiers)")
    parser.add_argument("--prompt", action="store_true",
                        help="with --step: also print the exact prompt the policy was given at that step")
    parser.add_argument("--from", dest="first", type=int, default=1, metavar="N", help="start the transcript at step N")
    parser.add_argument("--to", dest="last", type=int, metavar="N", help="end the transcript at step N")
    parser.add_argument("--json", action="store_true",
                        help="JSON for machines: one object per run per line, its steps in a list (with --step, one object)")
    following.add_follow_argument(parser, "print each step")


def run(args: argparse.Namespace) -> int:
    if args.step is not None and args.step < 0:
        return render.fail("show", f"--step {args.step}: steps are numbered from 1 (0 = the state before the first)")
    if args.prompt and not args.step:
        return render.fail("show", "--prompt needs --step N (N from 1): the prompt of which step?")
    if args.follow and args.step is not None:
        return render.fail("show", "--follow prints steps as they are written; --step shows one step: choose one")
    try:
        document = following.open_following(args, "show") if args.follow else render.open_input(args)
    except render.InputError as exc:
        return render.fail("show", str(exc))
    try:
        if args.step is not None:
            code = _show_step(document, args)
        elif args.follow:
            code = following.show(document, args)
        else:
            code = _show_transcript(document, args)
    except render.InputError as exc:
        code = render.fail("show", str(exc))
    except BrokenPipeError:  # `agentdbg show big.jsonl | head`
        render.quiet_broken_pipe()
        return 0
    finally:
        document.close()
    render.print_problems(document.problems, document.path, "show")
    return code


def _show_transcript(document, args: argparse.Namespace) -> int:
    console = render.make_console()
    width = console.width  # asked once: rich measures the terminal each time
    single = args.run is not None
    out = sys.stdout
    shown = 0
    for number, run in render.iter_runs(document, args.run, args.max_runs):
        shown += 1
        if args.json:
            # One JSON object per run, on one line, written as it is read: the steps array
            # is streamed, so even a million-step run never sits in memory.
            head = render.dumps({"run": number, **render.info_dict(run.info),
                                 "preamble": [e.to_dict() for e in getattr(run, "preamble", ())]})
            out.write(head[:-1] + ', "steps": [')
        else:
            total = len(document.runs) if getattr(document, "complete", True) else None
            render.emit(console, render.run_header(run, number, None if single else total, document.path, width))
        first = True
        for record in render.iter_records(run, max(args.first, 1), args.last):
            if args.json:
                out.write(("" if first else ", ") + render.dumps(render.record_dict(record)))
                first = False
            else:
                render.emit(console, render.step_block(record, width))
        if args.json:
            end = run.end
            tail = render.dumps({"step_count": run.step_count, "outcome": render.run_outcome(run),
                                 "answer": None if end is None else end.answer,
                                 "verdict": render.verdict_dict(render.run_verdict(run))})
            out.write("], " + tail[1:] + "\n")
        else:
            render.emit(console, render.outcome_text(run, width))
    out.flush()
    if not shown:
        raise render.no_runs(document)
    return 0


def _show_step(document, args: argparse.Namespace) -> int:
    number, run = next(render.iter_runs(document, args.run or 1))
    render.wait_for_step(run, args.step)
    if args.step > run.step_count:
        raise render.InputError(f"--step {args.step}: run {number} of {document.path} has {render.plural(run.step_count, 'step')}")
    record = run.record(args.step) if args.step else None
    state = run.state_at(args.step)
    prompt = prompt_at(run, args.step, max_steps_shown=PROMPT_STEPS) if args.prompt else None
    if args.json:
        print(render.dumps({
            "path": document.path, "run": number, "step": args.step, "steps": run.step_count,
            "record": None if record is None else render.record_dict(record),
            "state": state.to_dict(),
            **({"prompt": prompt} if prompt is not None else {}),
        }))
        return 0
    console = render.make_console()
    render.emit(console, render.run_header(run, number, None, document.path, console.width))
    if prompt is not None:
        render.emit(console, Text(f"prompt at step {args.step}, as the policy saw it:\n", style="bold magenta"))
        render.emit(console, Text(sanitize(prompt) + "\n\n"))
    render.emit(console, render.step_block(record, console.width) if record is not None
                else Text(sanitize("(before the first step)") + "\n"))
    render.emit(console, Text("\n"))
    render.emit(console, render.state_block(state, run.info, console.width))
    return 0
