"""The debugger's panes, one widget each."""
