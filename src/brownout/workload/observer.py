"""The observer: what the cluster said about itself, a few times a second.

It sends Kafka Metadata requests (v7+ carries each partition's leader epoch, which
confluent-kafka's metadata API hides) through the lab's small protocol client, so it
works against any Kafka reachable over PLAINTEXT, and records f="observe" events from
process "observer":

    value {"kind": "cluster", "controller", "brokers", "source"}      on a change
    topic, partition, value {"kind": "partition", "leader", "leader_epoch", "replicas",
                             "isr", "offline", "error"}                on a change
    value {"kind": "full", "controller", "brokers", "source",
           "partitions": {topic: {partition: {...}}}}                  every full_interval
    type info, error, value {"kind": "unreachable"}                    when no broker answers

"source" is the broker that answered: brokers' metadata caches can disagree for a moment,
so the observer sticks to one broker while it answers and says which one it was.

Beside it, `BrokerViews` asks every bootstrap broker for its own broker list once a
second, each on its own connection, and records each broker's list when it changes:

    value {"kind": "broker_view", "source", "node", "brokers"}    brokers: null while
                                                                  the broker does not answer

This is what a client's Metadata request to that broker would have been told (the
measure behind Observation D: a broker that lists only itself leaves a client that asks
it knowing one broker).
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
import uuid
from typing import Any

from ..cluster.wire import WireClient, WireError
from .history import INFO, OK, HistoryWriter

METADATA = 3
MIN_VERSION = 7  # the first Metadata version with leader_epoch
MAX_VERSION = 12


@dataclasses.dataclass(frozen=True)
class PartitionState:
    leader: int | None
    leader_epoch: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]
    error: str | None

    def as_json(self) -> dict[str, Any]:
        return {"leader": self.leader, "leader_epoch": self.leader_epoch,
                "replicas": list(self.replicas), "isr": list(self.isr),
                "offline": list(self.offline), "error": self.error}


@dataclasses.dataclass(frozen=True)
class Sample:
    source: str
    controller: int | None
    brokers: tuple[int, ...]
    partitions: dict[tuple[str, int], PartitionState]


def _error_name(code: int) -> str | None:
    if code == 0:
        return None
    try:
        from kio.schema.errors import ErrorCode

        return ErrorCode(code).name.upper()
    except ValueError:
        return f"error {code}"


def request_metadata(client: WireClient, topics: list[str] | None) -> Any:
    """A Metadata request for `topics` (None: every topic) at the highest version both
    sides support, at least v7."""
    from kio.index import load_request_schema

    low, high = client.api_versions().get(METADATA, (0, -1))
    version = min(high, MAX_VERSION)
    if version < max(low, MIN_VERSION):
        raise WireError(f"{client.address}: Metadata v{MIN_VERSION}+ not supported")
    cls = load_request_schema(METADATA, version)
    topic_cls = __import__(cls.__module__, fromlist=["MetadataRequestTopic"]).MetadataRequestTopic
    names = {f.name for f in dataclasses.fields(topic_cls)}
    wanted = None
    if topics is not None:
        wanted = tuple(
            topic_cls(**{k: v for k, v in (("name", t), ("topic_id", uuid.UUID(int=0)))
                         if k in names})
            for t in topics
        )
    fields = {f.name for f in dataclasses.fields(cls)}
    body = cls(**{k: v for k, v in {
        "topics": wanted, "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }.items() if k in fields})
    return client.request(METADATA, version, body)


def parse_sample(response: Any, source: str) -> Sample:
    partitions: dict[tuple[str, int], PartitionState] = {}
    for t in response.topics:
        if t.name is None or str(t.name).startswith("__"):
            continue  # internal topics are not the workload's
        for p in t.partitions:
            leader = int(p.leader_id)
            partitions[(str(t.name), int(p.partition_index))] = PartitionState(
                leader=leader if leader >= 0 else None,
                leader_epoch=int(p.leader_epoch),
                replicas=tuple(int(r) for r in p.replica_nodes),
                isr=tuple(int(r) for r in p.isr_nodes),
                offline=tuple(int(r) for r in getattr(p, "offline_replicas", ()) or ()),
                error=_error_name(int(p.error_code)),
            )
    controller = int(getattr(response, "controller_id", -1))
    return Sample(source=source, controller=controller if controller >= 0 else None,
                  brokers=tuple(sorted(int(b.node_id) for b in response.brokers)),
                  partitions=partitions)


class Observer:
    def __init__(self, history: HistoryWriter, bootstrap: str, topics: list[str] | None, *,
                 interval: float = 0.25, full_interval: float = 5.0, timeout: float = 1.0,
                 stop: threading.Event | None = None, process: str = "observer") -> None:
        self.history = history
        self.addresses = [a.strip() for a in bootstrap.split(",") if a.strip()]
        self.topics = topics
        self.interval = interval
        self.full_interval = full_interval
        self.timeout = timeout
        self.stop = stop or threading.Event()
        self.process = process
        self.samples = 0
        self.last: Sample | None = None
        self._client: WireClient | None = None
        self._learned: list[str] = []  # broker addresses from earlier samples
        self._unreachable = False
        self.thread = threading.Thread(target=self._run, name=process, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)

    def sample(self) -> Sample:
        """One Metadata round trip, from the current broker or the first that answers."""
        errors = []
        if self._client is not None:
            try:
                return parse_sample(request_metadata(self._client, self.topics),
                                    self._client.address)
            except (WireError, OSError, ValueError) as e:
                errors.append(str(e))
                self._close()
        for address in dict.fromkeys(self.addresses + self._learned):
            try:
                client = WireClient(address, timeout=self.timeout, client_id="brownout-observer")
            except WireError as e:
                errors.append(str(e))
                continue
            try:
                response = request_metadata(client, self.topics)
            except (WireError, OSError, ValueError) as e:
                errors.append(str(e))
                client.close()
                continue
            self._client = client
            self._learned = [f"{b.host}:{b.port}" for b in response.brokers]
            return parse_sample(response, address)
        raise WireError("; ".join(errors) or "no bootstrap address")

    def observe_once(self, full: bool = False) -> None:
        """Sample and record what changed since the last sample (everything if full)."""
        try:
            sample = self.sample()
        except WireError as e:
            if not self._unreachable:
                self._unreachable = True
                self.history.record(INFO, "observe", self.process, error="UNREACHABLE",
                                    value=json.dumps({"kind": "unreachable", "why": str(e)}))
            return
        self.samples += 1
        self._unreachable = False
        last = self.last
        self.last = sample
        if last is None or (last.controller, last.brokers) != (sample.controller,
                                                                sample.brokers):
            self._record({"kind": "cluster", "controller": sample.controller,
                          "brokers": list(sample.brokers), "source": sample.source})
        for (topic, partition), state in sorted(sample.partitions.items()):
            if last is None or last.partitions.get((topic, partition)) != state:
                self._record({"kind": "partition", **state.as_json()}, topic=topic,
                             partition=partition)
        if full:  # a periodic full picture, so no reader has to replay from the start
            self._record({"kind": "full", "controller": sample.controller,
                          "brokers": list(sample.brokers), "source": sample.source,
                          "partitions": _nested(sample.partitions)})

    def _record(self, value: dict[str, Any], **fields: Any) -> None:
        self.history.record(OK, "observe", self.process,
                            value=json.dumps(value, separators=(",", ":")), **fields)

    def _close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _run(self) -> None:
        next_full = time.monotonic()
        try:
            while not self.stop.is_set():
                now = time.monotonic()
                full = now >= next_full
                if full:
                    next_full = now + self.full_interval
                self.observe_once(full=full)
                self.stop.wait(self.interval)
        finally:
            self._close()


def _nested(partitions: dict[tuple[str, int], PartitionState]) -> dict[str, Any]:
    out: dict[str, dict[str, Any]] = {}
    for (topic, partition), state in sorted(partitions.items()):
        out.setdefault(topic, {})[str(partition)] = state.as_json()
    return out


class BrokerViews:
    """Each bootstrap broker's own broker list, sampled every `interval` on a thread of
    its own (a broker that does not answer holds this thread up to `timeout`, not the
    observer's), recorded per broker when it changes (module docstring)."""

    def __init__(self, history: HistoryWriter, bootstrap: str, *, interval: float = 1.0,
                 timeout: float = 1.0, stop: threading.Event | None = None,
                 process: str = "observer") -> None:
        self.history = history
        self.addresses = [a.strip() for a in bootstrap.split(",") if a.strip()]
        self.interval = interval
        self.timeout = timeout
        self.stop = stop or threading.Event()
        self.process = process
        self._clients: dict[str, WireClient] = {}
        self._last: dict[str, tuple[int, ...] | None] = {}
        self._nodes: dict[str, int] = {}  # address -> node id, as Metadata lists it
        self.thread = threading.Thread(target=self._run, name=f"{process}-views", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)

    def view(self, address: str) -> tuple[int, ...] | None:
        """The broker ids `address` lists in its Metadata now; None when it does not
        answer."""
        try:
            client = self._clients.get(address)
            if client is None:
                client = WireClient(address, timeout=self.timeout,
                                    client_id="brownout-observer-views")
                self._clients[address] = client
            response = request_metadata(client, [])
        except (WireError, OSError, ValueError):
            self._drop(address)
            return None
        for b in response.brokers:
            self._nodes[f"{b.host}:{b.port}"] = int(b.node_id)
        return tuple(sorted(int(b.node_id) for b in response.brokers))

    def observe_once(self) -> None:
        for address in self.addresses:
            brokers = self.view(address)
            if address in self._last and self._last[address] == brokers:
                continue
            self._last[address] = brokers
            value = {"kind": "broker_view", "source": address,
                     "node": self._nodes.get(address),
                     "brokers": None if brokers is None else list(brokers)}
            self.history.record(OK, "observe", self.process,
                                value=json.dumps(value, separators=(",", ":")))

    def _drop(self, address: str) -> None:
        client = self._clients.pop(address, None)
        if client is not None:
            client.close()

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                self.observe_once()
                self.stop.wait(self.interval)
        finally:
            for address in list(self._clients):
                self._drop(address)
