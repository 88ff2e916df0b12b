"""Token estimates for the token budget guard.

The default estimator is deterministic and offline: one token per started group of four
characters, the usual rule of thumb for English text with GPT-style tokenizers. Any
callable ``str -> int`` (a real tokenizer's ``len(encode(text))``) can replace it.
"""

from __future__ import annotations

from collections.abc import Callable

TokenEstimator = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """ceil(len(text) / 4); 0 for empty text."""
    return (len(text) + 3) // 4
