"""The Textual debugger: panes over a ``DebugSession``, driven by keys, mouse and palette."""
