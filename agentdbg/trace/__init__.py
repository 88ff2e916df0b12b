"""agentdbg trace files: JSON Lines, a header line then one event per line."""
