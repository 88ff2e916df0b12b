"""Regenerate docs/screenshot.svg, the README's picture: the bundled demo run to its end
and continued back to its first break (the tool that does not exist), at 160x40.

    python docs/screenshot.py
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentdbg.tui.app import DebuggerApp
from agentdbg.tui.opening import open_demo

SIZE = (160, 40)
KEYS = ("c", "c", "C")
TARGET = Path(__file__).with_name("screenshot.svg")


async def main() -> None:
    app = DebuggerApp(open_demo(), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        for key in KEYS:
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.press(key)
        await app.workers.wait_for_complete()
        await pilot.pause(0.3)
        TARGET.write_text(app.export_screenshot(title="agentdbg"), encoding="utf-8")
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    asyncio.run(main())
