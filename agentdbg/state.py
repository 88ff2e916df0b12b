"""Moved to agentdbg.model.state; this name keeps old imports working."""
from agentdbg.model.state import *  # noqa: F403
