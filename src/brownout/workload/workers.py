"""What producer and consumer groups share: threads started together under one
deadline, a liveness check and a join bounded by one overall timeout."""

from __future__ import annotations

import time
from typing import Any


class WorkerGroup:
    """Base of ProducerGroup and ConsumerGroup; subclasses set `settings` (with its
    `duration`) and `workers` (each with `deadline`, `start`, `join` and `thread`)."""

    settings: Any
    workers: list[Any]

    def prepare(self) -> None:
        """Start what takes long to start before any group starts (JVMs: all of a run's
        at once); nothing for clients that start in a moment."""
        if self.settings.client == "java":
            for w in self.workers:
                w.create_client()

    def start(self) -> None:
        # The duration counts from here, not from construction (clients, observers and
        # the display may take a moment to set up in between).
        if self.settings.duration:
            deadline = time.monotonic() + self.settings.duration
            for w in self.workers:
                w.deadline = deadline
        for w in self.workers:
            w.start()

    def alive(self) -> bool:
        return any(w.thread.is_alive() for w in self.workers)

    def join(self, timeout: float | None = None) -> None:
        end = None if timeout is None else time.monotonic() + timeout
        for w in self.workers:
            w.join(None if end is None else max(0.0, end - time.monotonic()))
