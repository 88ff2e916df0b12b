"""The debugger on a case, driven by Textual's pilot (runs inside a forked child).

``agentdbg FILE`` is built exactly as the command builds it; if it refuses (an exit
code) that code is returned, else the app runs headless, each key of the case is pressed
and the screen is searched for unsafe characters after each, and the last key (q) must
end the app without an exception. Each screen reached is progress: the time limit is
for opening the file and for each key, not for the whole run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from fuzz import execute
from fuzz.classify import UNSAFE, char_class, describe

SIZE = (120, 40)


def run(argv: list[str], keys: tuple[str, ...], report: Path) -> int:
    from agentdbg.cli import _main_parser
    from agentdbg.cli.debug import build_app

    app = build_app(_main_parser().parse_args(argv))
    if isinstance(app, int):
        return app
    asyncio.run(_drive(app, keys, report))
    return 0


async def _settle(pilot) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def _scan(app, after: str, seen: set, report: Path) -> None:
    text = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
    for match in UNSAFE.finditer(text):
        cls = char_class(match.group())
        if cls not in seen:
            seen.add(cls)
            with open(report, "a", encoding="utf-8") as handle:
                handle.write(f"{cls}\tscreen {after}: {describe(match.group())}\n")


async def _drive(app, keys: tuple[str, ...], report: Path) -> None:
    seen: set = set()
    async with app.run_test(size=SIZE) as pilot:
        await _settle(pilot)
        _scan(app, "when opened", seen, report)
        execute.tick()
        for key in keys:
            await pilot.press(key)
            if key == "q":
                break
            await _settle(pilot)
            _scan(app, f"after {key}", seen, report)
            execute.tick()
        await pilot.pause()
        if app.is_running and app.return_code is None:
            with open(report, "a", encoding="utf-8") as handle:
                handle.write(f"still running\t{' '.join(keys)}: q did not quit\n")
