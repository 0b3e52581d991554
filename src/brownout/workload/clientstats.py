"""What brokers a client knows, from librdkafka's own statistics (for the rolling-restart
rebalance, docs/scenarios.md).

librdkafka emits a statistics JSON every `statistics.interval.ms` through `stats_cb`.
Its "brokers" object is the client's broker list as its latest Metadata responses left
it (since librdkafka 2.x, brokers missing from Metadata are decommissioned), with each
connection's state. A rebalance after a rolling restart is explained by exactly this:
a client whose metadata listed only the broker that then went down. Recording every
change of that list, per client, as f="metadata" events makes it visible in the history.
"""

from __future__ import annotations

import json
from typing import Any

from .history import OK, HistoryWriter

DEFAULT_STATS_INTERVAL_MS = 500


def broker_list(stats: dict[str, Any]) -> list[dict[str, Any]]:
    """The brokers of one statistics document, sorted, with only the fields that matter:
    node id (-1 for a bootstrap entry not yet identified), address, state, and whether
    the entry came from the configuration or was learned from Metadata."""
    brokers = []
    for entry in (stats.get("brokers") or {}).values():
        if entry.get("source") == "internal" or entry.get("nodeid", -1) < -1:
            continue  # librdkafka's internal pseudo-broker (:0/internal)
        brokers.append({
            "nodeid": entry.get("nodeid", -1),
            "name": entry.get("nodename") or entry.get("name"),
            "state": entry.get("state"),
            "source": entry.get("source"),
        })
    brokers.sort(key=lambda b: (b["nodeid"], str(b["name"])))
    return brokers


class MetadataRecorder:
    """A `stats_cb` that records the broker list when it changes (the statistics arrive
    every interval; unchanged lists would only bloat the history)."""

    def __init__(self, history: HistoryWriter, process: str) -> None:
        self.history = history
        self.process = process
        self.last: list[dict[str, Any]] | None = None
        self.errors = 0

    def __call__(self, stats_json: str) -> None:
        try:
            stats = json.loads(stats_json)
        except ValueError:
            self.errors += 1
            return
        brokers = broker_list(stats)
        if brokers == self.last:
            return
        self.last = brokers
        value = {
            "client": stats.get("client_id"),
            "type": stats.get("type"),
            "brokers": brokers,
            "learned": sorted(b["nodeid"] for b in brokers if b["nodeid"] >= 0),
            "up": sorted(b["nodeid"] for b in brokers if b["nodeid"] >= 0 and b["state"] == "UP"),
        }
        self.history.record(OK, "metadata", self.process,
                            value=json.dumps(value, separators=(",", ":")))


def error_name(err: Any) -> str:
    """Kafka's / librdkafka's name for a KafkaError ("NOT_ENOUGH_REPLICAS",
    "_MSG_TIMED_OUT"); anything else as its text."""
    name = getattr(err, "name", None)
    if callable(name):
        try:
            return str(name())
        except Exception:  # pragma: no cover - defensive: a broken error object
            pass
    return str(err)
