"""The consumers of one ConsumerSettings: a worker per name, of the client it names.

Apart from consumer.py (confluent-kafka), kp_consumer.py (kafka-python) and
java_clients.py (Kafka's VerifiableConsumer) because it is the one place that knows them
all, and kp_consumer builds on consumer's settings and base.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from .consumer import ConsumerSettings, ConsumerWorker
from .history import HistoryWriter
from .java_clients import JavaConsumerWorker, java_runtime, start_all
from .kp_consumer import KafkaPythonConsumerWorker
from .workers import WorkerGroup


class ConsumerGroup(WorkerGroup):
    """`run`: the run's id (records without the lab's headers are known by their value);
    `work_dir`: where Java consumers keep their files."""

    def __init__(self, settings: ConsumerSettings, history: HistoryWriter, names: list[str],
                 *, stop: threading.Event, logger: logging.Logger | None = None,
                 run: str | None = None, work_dir: Path | None = None) -> None:
        settings.validate()
        self.settings = settings
        self.workers: list[Any]
        if settings.client == "kafka-python":
            self.workers = [KafkaPythonConsumerWorker(settings, history, name, stop=stop,
                                                      deadline=None, run=run)
                            for name in names]
        elif settings.client == "java":
            if work_dir is None:
                raise ValueError("Java consumers need a directory for their files")
            runtime = java_runtime()
            self.workers = [JavaConsumerWorker(settings, history, name, stop=stop,
                                               deadline=None, work_dir=work_dir,
                                               runtime=runtime, run=run) for name in names]
        else:
            self.workers = [ConsumerWorker(settings, history, name, stop=stop,
                                           deadline=None, logger=logger, run=run)
                            for name in names]

    def start(self) -> None:
        if self.settings.client == "java":
            start_all(self.workers)  # in parallel, until each JVM runs its consumer
        super().start()

    def totals(self) -> dict[str, int]:
        return {
            "polled": sum(w.recorder.polled for w in self.workers),
            "poll_errors": sum(w.recorder.errors for w in self.workers),
            "rebalances": sum(w.rebalances for w in self.workers),
            "assigned": sum(len(w.assigned) for w in self.workers),
            "commits": sum(w.commits for w in self.workers),
        }
