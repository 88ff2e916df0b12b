"""Token estimates for the token budget guard.

The loop charges every step ``estimate(prompt) + estimate(output)``: what the policy was
shown plus what it wrote, the way a model API bills a call. The default estimator is
deterministic and offline: one token per started group of four UTF-8 bytes. For English
(ASCII) text that is the usual rule of thumb of four characters per token for GPT-style
tokenizers; counting bytes rather than characters keeps the estimate from collapsing on
other scripts (a Chinese or Japanese character is three bytes and is often a token or more
on its own, so four characters per token would undercount such text about fourfold, and a
budget guard must not undercount).

Any callable ``str -> int`` replaces it: ``ReActAgent(..., tokens=from_tokenizer(enc.encode))``
with a real tokenizer's ``encode``. See ``docs/memory.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

TokenEstimator = Callable[[str], int]

BYTES_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """ceil(UTF-8 bytes of ``text`` / 4); 0 for empty text. For ASCII text (one byte per
    character) that is ceil(len(text) / 4)."""
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return (size + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN


def from_tokenizer(encode: Callable[[str], Sequence[Any]]) -> TokenEstimator:
    """An estimator that counts exactly what a real tokenizer's ``encode`` returns."""

    def count(text: str) -> int:
        return len(encode(text))

    count.__qualname__ = f"from_tokenizer({getattr(encode, '__qualname__', type(encode).__name__)})"
    return count
