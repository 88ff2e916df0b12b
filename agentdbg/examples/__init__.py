"""Worked examples as Python: the library question and its policies."""
