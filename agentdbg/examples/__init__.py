"""Worked examples as Python: the seed 004 library and its policies."""
