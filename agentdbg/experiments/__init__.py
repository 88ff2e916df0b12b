"""Experiments: many runs of the engine, headless, summed up in a table (``agentdbg experiment``)."""

EXPERIMENTS = {
    "grid": "three agents (reactive, memory, planner) on 200 random 8x8 grids: arrivals and extra moves",
}
