"""How the main screen fits the terminal.

Wide terminals show every pane side by side. Below ``NARROW_COLUMNS`` the sidebar no
longer fits beside a readable transcript, so the scratchpad and the three state panes
share one column, chosen with a row of tabs (as lazygit and Harlequin do): click a tab,
or press the pane's number key. Everything here is CSS classes on ``#main``: no widget
is moved or remounted, so nothing a pane holds is lost when the terminal is resized.
"""

from __future__ import annotations

from textual.widgets import Tab, Tabs

NARROW_COLUMNS = 108  # below this the sidebar is a tab beside the scratchpad
TABBED = ("scratchpad", "guards", "tools", "memory")
TITLES = {"scratchpad": "Scratchpad", "guards": "Guards", "tools": "Tools", "memory": "Memory"}


class PaneTabs(Tabs, can_focus=False):
    """The tabs of a narrow screen (hidden on a wide one). Not in the focus chain: the
    panes are; keys and clicks choose a tab."""

    def __init__(self, *, id: str | None = None):
        super().__init__(*(Tab(TITLES[pane], id=f"tab-{pane}") for pane in TABBED), id=id)


def is_narrow(width: int) -> bool:
    return 0 < width < NARROW_COLUMNS


def set_tab_classes(main, narrow: bool, tab: str) -> None:
    """Mark ``main`` narrow or not, and which pane its tabs show."""
    main.set_class(narrow, "-narrow")
    for pane in TABBED:
        main.set_class(pane == tab, f"-tab-{pane}")
