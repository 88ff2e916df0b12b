"""The debugger core, free of any UI: the cursor (``session``), breakpoints
(``breakpoints``) and the filter language (``filters``)."""

from agentdbg.debugger.breakpoints import AUTO_BREAKS, Breakpoint, BreakpointSet, sidecar_path
from agentdbg.debugger.filters import FILTER_HELP, Filter, parse_filter
from agentdbg.debugger.session import DebugSession, Stop

__all__ = [
    "AUTO_BREAKS",
    "FILTER_HELP",
    "Breakpoint",
    "BreakpointSet",
    "DebugSession",
    "Filter",
    "Stop",
    "parse_filter",
    "sidecar_path",
]
