"""Moved to agentdbg.model.prompt; this name keeps old imports working."""
from agentdbg.model.prompt import *  # noqa: F403
