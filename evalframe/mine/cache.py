"""The call cache: a paid solver call (or a slow validation) is never made twice.

An entry's key is a content hash of everything that can change the result:
the plugin's name, version, validated config (secret-looking fields left
out), ``cache_identity()`` and, for code developed in place (an editable
install, a module on ``PYTHONPATH``), a hash of its source
(:func:`~evalframe.plugin.codeid.code_identity`: a prompt edited in the code
under one version is a new plugin, not the old one's answers), and the
call's inputs. For a solver these are
the task, the documents in the context (ids and texts, in the order shown),
the trial's index and its seed, so that two trials that happen to draw the
same context are still two independent attempts, and re-running the same
command with the same seed finds every trial it already paid for.

Entries live in an :class:`~evalframe.core.store.EntryStore` (the solver's
in the ``solver`` namespace, the validator's in ``validator``), beside the
retrieval cache's ``runs``; ``evalframe cache info`` counts all of them.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from pydantic import BaseModel

from evalframe.core.secrets import is_secret_name
from evalframe.core.store import EntryStore
from evalframe.core.types import content_hash
from evalframe.plugin.codeid import code_identity

__all__ = ["FORMAT", "CallCache", "plugin_fingerprint"]

#: Bump when the entry layout changes; old entries are then simply not found.
FORMAT = 1


def plugin_fingerprint(
    kind: str, name: str, version: str | None, config: BaseModel | None, instance: Any
) -> dict[str, Any]:
    """What identifies a plugin's results apart from its inputs: part of every key."""
    public = {}
    if config is not None:
        public = {k: v for k, v in config.model_dump(mode="json").items() if not is_secret_name(k)}
    fingerprint: dict[str, Any] = {
        "format": FORMAT,
        kind: name,
        "version": version,
        "config": public,
    }
    identity = getattr(instance, "cache_identity", None)
    if callable(identity):
        fingerprint["identity"] = identity()
    if instance is not None:  # a release from an index keeps the key it always had
        code = code_identity(type(instance).__module__)
        if code is not None:
            fingerprint["code"] = code
    return fingerprint


class CallCache:
    """JSON results of one plugin's calls, keyed by fingerprint + inputs; counts hits."""

    def __init__(self, store: EntryStore | None, fingerprint: dict[str, Any]) -> None:
        self.store = store
        self.fingerprint = fingerprint
        self.hits = 0
        self.calls = 0
        self._lock = threading.Lock()  # solver calls run in a thread pool

    def key(self, inputs: dict[str, Any]) -> str:
        return content_hash({**self.fingerprint, "inputs": inputs})

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored result, or None when absent, unreadable or from another key."""
        if self.store is None:
            return None
        text = self.store.get(key)
        if text is None:
            return None
        try:
            entry = json.loads(text)
        except ValueError:
            return None  # a damaged entry: call again and overwrite it
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        result = entry.get("result")
        if not isinstance(result, dict):
            return None
        with self._lock:
            self.hits += 1
        return result

    def put(self, key: str, result: dict[str, Any]) -> None:
        with self._lock:
            self.calls += 1
        if self.store is not None:
            self.store.put(key, json.dumps({"key": key, "result": result}, ensure_ascii=False))
