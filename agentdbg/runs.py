"""Moved to agentdbg.model.runs; this name keeps old imports working."""
from agentdbg.model.runs import *  # noqa: F403
