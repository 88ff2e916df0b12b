"""What the debugger shows, derived from events alone: step records and state by step
(``state``), runs and opened documents (``runs``), the prompt a model saw at a step
(``prompt``). Nothing here knows of a screen."""
