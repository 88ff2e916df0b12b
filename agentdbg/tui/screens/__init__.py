"""The debugger's dialogs: help, go to step, breakpoints, search, open, write, runs."""
