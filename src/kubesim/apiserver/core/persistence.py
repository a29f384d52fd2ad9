"""`--data-dir`: the simulated cluster's state survives a restart of the server process.

A snapshot (`snapshot.json`) plus an append-only journal of every change since
(`journal.jsonl`, one JSON line per event, flushed every 100 ms and on stop). Loading
replays both, then writes a fresh snapshot and starts an empty journal, so the journal
never grows beyond one run. A crash loses at most the last flush interval, as a real
etcd with a lagging fsync would; a torn last line is ignored.

Watch history is not kept: after a restart, watches from an older resourceVersion get
410 Gone and clients relist, as they must after an API server restart anyway.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import IO, Any

import orjson

from kubesim.apiserver.core.apicore import ApiCore
from kubesim.apiserver.core.statedir import check_existing, private_dir, write_private
from kubesim.apiserver.core.store import DELETED, ResourceKey, WatchEvent, object_key
from kubesim.apiserver.registry.apiextensions.customresourcedefinition import CRD_KEY

FLUSH_SECONDS = 0.1


class Persistence:
    def __init__(self, data_dir: Path, core: ApiCore) -> None:
        self.dir = private_dir(data_dir)  # every Secret is in there: 0700, this user's
        self.core = core
        self._journal: IO[bytes] | None = None
        self._buffer: list[bytes] = []
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    @property
    def snapshot_path(self) -> Path:
        return self.dir / "snapshot.json"

    @property
    def journal_path(self) -> Path:
        return self.dir / "journal.jsonl"

    def load(self) -> int:
        """Restore state into the (empty) store; return how many objects were loaded."""
        state: dict[tuple[str, str, str, str], tuple[ResourceKey, dict[str, Any]]] = {}
        rv = 1
        for path in (self.snapshot_path, self.journal_path):
            check_existing(path)
        if self.snapshot_path.exists():
            snap = orjson.loads(self.snapshot_path.read_bytes())
            rv = max(rv, int(snap.get("rv", 1)))
            for entry in snap.get("objects", []):
                rkey = (entry["g"], entry["r"])
                obj = entry["o"]
                state[(*rkey, *object_key(obj))] = (rkey, obj)
        if self.journal_path.exists():
            with self.journal_path.open("rb") as f:
                for line in f:
                    try:
                        entry = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        break  # a torn final line from a crash
                    rkey = (entry["g"], entry["r"])
                    obj = entry["o"]
                    key = (*rkey, *object_key(obj))
                    rv = max(rv, int(obj["metadata"].get("resourceVersion", 0)))
                    if entry["t"] == DELETED:
                        state.pop(key, None)
                    else:
                        state[key] = (rkey, obj)
        store = self.core.store
        # CRDs first, so their types are served before their objects are restored.
        ordered = sorted(state.values(), key=lambda item: item[0] != CRD_KEY)
        for rkey, obj in ordered:
            obj_rv = int(obj["metadata"].get("resourceVersion", 0))
            rv = max(rv, obj_rv)
            store.put(rkey, obj, obj_rv)
            if rkey == CRD_KEY:
                crd_rt = self.core.registry.get(
                    "apiextensions.k8s.io", "v1", "customresourcedefinitions"
                )
                assert crd_rt is not None
                for hook in self.core.hooks:
                    hook.after_write(crd_rt, obj, None)
        store.rv = rv
        for rs in store.resources.values():
            rs.history.clear()
            rs.compacted_rv = rv
        self._write_snapshot()
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(self.journal_path, flags, 0o600)
        os.fchmod(fd, 0o600)
        self._journal = os.fdopen(fd, "wb")
        store.journal = self._record
        return len(state)

    def _write_snapshot(self) -> None:
        store = self.core.store
        objects = [
            {"g": rkey[0], "r": rkey[1], "o": obj}
            for rkey, rs in store.resources.items()
            for obj in rs.objects.values()
        ]
        tmp = self.snapshot_path.with_suffix(".tmp")
        write_private(tmp, orjson.dumps({"rv": store.rv, "objects": objects}))
        os.replace(tmp, self.snapshot_path)

    def _record(self, rkey: ResourceKey, ev: WatchEvent) -> None:
        line = orjson.dumps({"t": ev.type, "g": rkey[0], "r": rkey[1], "o": ev.obj}) + b"\n"
        with self._lock:
            self._buffer.append(line)
            if self._timer is None:
                self._timer = threading.Timer(FLUSH_SECONDS, self.flush)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> None:
        with self._lock:
            self._timer = None
            if not self._buffer or self._journal is None:
                return
            data = b"".join(self._buffer)
            self._buffer.clear()
            self._journal.write(data)
            self._journal.flush()

    def close(self) -> None:
        timer = self._timer
        if timer is not None:
            timer.cancel()
        self.flush()
        if self._journal is not None:
            with contextlib.suppress(OSError):
                os.fsync(self._journal.fileno())
            self._journal.close()
            self._journal = None
        self.core.store.journal = None
