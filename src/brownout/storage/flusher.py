"""Background fsync: the writes happen at once, the waits for the disk do not.

A node serves every request, heartbeat and Raft fetch from one event loop, so an fsync
there stalls all of them: creating the 50 partitions of ``__consumer_offsets`` (a
directory, ``partition.metadata`` and ``leader-epoch-checkpoint`` each, about 250
fsyncs) stalled brokers for over a second, longer than Raft's fetch timeout. Kafka does
the same I/O on its request handler and scheduler threads, never on a thread that all
of a broker's work shares.

So a Log given a Flusher writes and renames its small metadata files immediately and
hands the fsync of the file and its directory to one background thread, in order.
After kill -9 (the lab's crash) nothing is lost, because the data is already in the
page cache; only a power cut could lose the newest of these files, which is the window
Kafka also accepts for the checkpoints it flushes in the background. `drain` waits for
everything queued, and `close` drains and stops, so a clean shutdown ends durable.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from pathlib import Path

log = logging.getLogger("kafka.log.Flusher")

_STOP = object()


class Flusher:
    """One daemon thread that fsyncs the paths handed to it, oldest first."""

    def __init__(self, name: str = "log-flusher") -> None:
        self._queue: queue.Queue[object] = queue.Queue()
        self._pending: set[Path] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def __call__(self, path: Path) -> None:
        """Make `path` (a file or a directory) durable soon."""
        path = Path(path)
        with self._lock:
            if path in self._pending:
                return  # the queued fsync will cover this write too
            self._pending.add(path)
        self._queue.put(path)

    def drain(self) -> None:
        """Block until every path queued so far was fsynced."""
        done = threading.Event()
        self._queue.put(done)
        done.wait()

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            if isinstance(item, threading.Event):
                item.set()
                continue
            assert isinstance(item, Path)
            with self._lock:
                self._pending.discard(item)
            fsync_path(item)


def fsync_path(path: Path) -> None:
    """fsync a file or directory; one deleted meanwhile needs nothing."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    except OSError as e:  # a failing disk must not kill the flusher silently
        log.error("fsync of %s failed: %s", path, e)
    finally:
        os.close(fd)
