"""The consumers of one ConsumerSettings: a worker per name, of the client it names.

Apart from consumer.py (confluent-kafka) and kp_consumer.py (kafka-python) because it is
the one place that knows both, and kp_consumer builds on consumer's settings and base.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from .consumer import ConsumerSettings, ConsumerWorker
from .history import HistoryWriter
from .kp_consumer import KafkaPythonConsumerWorker
from .workers import WorkerGroup


class ConsumerGroup(WorkerGroup):
    def __init__(self, settings: ConsumerSettings, history: HistoryWriter, names: list[str],
                 *, stop: threading.Event, logger: logging.Logger | None = None) -> None:
        settings.validate()
        self.settings = settings
        self.workers: list[Any]
        if settings.client == "kafka-python":
            self.workers = [KafkaPythonConsumerWorker(settings, history, name, stop=stop,
                                                      deadline=None) for name in names]
        else:
            self.workers = [ConsumerWorker(settings, history, name, stop=stop,
                                           deadline=None, logger=logger) for name in names]

    def totals(self) -> dict[str, int]:
        return {
            "polled": sum(w.recorder.polled for w in self.workers),
            "poll_errors": sum(w.recorder.errors for w in self.workers),
            "rebalances": sum(w.rebalances for w in self.workers),
            "assigned": sum(len(w.assigned) for w in self.workers),
            "commits": sum(w.commits for w in self.workers),
        }
