"""agentdbg: a terminal debugger for AI-agent runs."""

__version__ = "0.1.0"
