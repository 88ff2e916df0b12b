"""A least-recently-used cache for code that must not import Textual (the trace reader).

The screens use ``textual.cache.LRUCache``; this one has the same methods (``get``,
``set``, ``discard``, ``keys``, ``values``, ``clear``), so the two read alike. Setting a key that is
already there replaces its value (Textual's keeps the old one).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, KeysView, ValuesView
from typing import Generic, TypeVar, overload

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
D = TypeVar("D")


class LRUCache(Generic[K, V]):
    """At most ``maxsize`` entries; adding one more drops the one used longest ago."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._items: OrderedDict[K, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    @overload
    def get(self, key: K) -> V | None: ...

    @overload
    def get(self, key: K, default: D) -> V | D: ...

    def get(self, key: K, default: D | None = None) -> V | D | None:
        """The value (now the most recently used), or ``default``."""
        try:
            self._items.move_to_end(key)
        except KeyError:
            return default
        return self._items[key]

    def __getitem__(self, key: K) -> V:
        self._items.move_to_end(key)
        return self._items[key]

    def set(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self.maxsize:
            self._items.popitem(last=False)

    __setitem__ = set

    def discard(self, key: K) -> None:
        self._items.pop(key, None)

    def keys(self) -> KeysView[K]:
        return self._items.keys()

    def values(self) -> ValuesView[V]:
        return self._items.values()

    def clear(self) -> None:
        self._items.clear()
