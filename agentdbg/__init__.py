"""agentdbg: a terminal debugger for AI-agent runs."""

__version__ = "0.1.0"

# Loaded on first use, so ``import agentdbg`` stays cheap (the CLI imports it first).
_LAZY = {
    "record": "agentdbg.recorder",
    "Recorder": "agentdbg.recorder",
    "RunEnded": "agentdbg.recorder",
    "Tool": "agentdbg.engine.tools",
    "dangerous": "agentdbg.engine.tools",
    "Decision": "agentdbg.engine.approval",
    "ApprovalRequest": "agentdbg.engine.approval",
    "ApprovalRequired": "agentdbg.recorder",
}
__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentdbg' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
