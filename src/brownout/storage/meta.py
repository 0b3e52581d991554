"""``meta.properties`` and Kafka's Uuid text form.

A KRaft log dir is "formatted" when it holds ``meta.properties`` with ``version=1``,
``cluster.id``, ``node.id`` and ``directory.id``. A node refuses to start on an
unformatted dir or on one formatted for another node or cluster, which is what stops a
wiped or swapped disk from silently rejoining a cluster.

A ZooKeeper-mode broker writes ``version=0`` with ``broker.id`` and ``cluster.id`` itself on
first start (the cluster id comes from ZooKeeper's /cluster/id); from then on the same
checks apply. The two kinds are not interchangeable: each mode refuses the other's.

Kafka prints a Uuid as the URL-safe base64 of its 16 bytes without padding (22 chars).
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from brownout.storage.checkpoint import atomic_write_text
from brownout.storage.errors import (
    CorruptCheckpointError,
    InconsistentStorageError,
    StorageNotFormattedError,
)

META_PROPERTIES = "meta.properties"
META_VERSION = 1
ZK_META_VERSION = 0

# Kafka reserves these two ids (Uuid.ZERO_UUID and Uuid.METADATA_TOPIC_ID).
_RESERVED = {uuid.UUID(int=0), uuid.UUID(int=1)}


def uuid_to_str(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def uuid_from_str(text: str) -> uuid.UUID:
    if len(text) != 22:
        raise ValueError(f"{text!r} is not a 22-character base64url Uuid")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except ValueError as exc:
        raise ValueError(f"{text!r} is not valid base64url: {exc}") from None
    return uuid.UUID(bytes=raw)


# Topic ids use the same text form; the aliases say what the caller means.
topic_id_to_str = uuid_to_str
topic_id_from_str = uuid_from_str


def random_uuid() -> str:
    """Like ``kafka-storage random-uuid``: random, never reserved, never starting with '-'
    (Kafka avoids a leading dash so the id cannot be mistaken for a CLI flag)."""
    while True:
        value = uuid.uuid4()
        text = uuid_to_str(value)
        if value not in _RESERVED and not text.startswith("-"):
            return text


def read_properties(path: Path) -> dict[str, str]:
    """Parse the simple subset of Java .properties that Kafka writes."""
    props: dict[str, str] = {}
    for line_no, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise CorruptCheckpointError(
                f"malformed properties file {path}, line {line_no}: {raw!r}")
        props[key.strip()] = value.strip()
    return props


def write_meta_properties(log_dir: Path, cluster_id: str, node_id: int) -> None:
    body = (
        "#\n"
        f"#{time.strftime('%a %b %d %H:%M:%S %Z %Y')}\n"
        f"cluster.id={cluster_id}\n"
        f"directory.id={random_uuid()}\n"
        f"node.id={node_id}\n"
        f"version={META_VERSION}\n"
    )
    atomic_write_text(log_dir / META_PROPERTIES, body)


def read_meta_properties(log_dir: Path) -> dict[str, str] | None:
    """A KRaft dir's meta.properties (version 1), None when there is none."""
    props = _read_meta(log_dir)
    if props is None:
        return None
    if props["version"] != str(META_VERSION):
        raise InconsistentStorageError(
            f"{log_dir / META_PROPERTIES} has version={props['version']}, only "
            f"version={META_VERSION} is supported"
            + (" (it was written by a ZooKeeper-mode broker)"
               if props["version"] == str(ZK_META_VERSION) else "")
        )
    for key in ("cluster.id", "node.id"):
        if key not in props:
            raise CorruptCheckpointError(f"{log_dir / META_PROPERTIES} has no {key}")
    return props


def _read_meta(log_dir: Path) -> dict[str, str] | None:
    path = log_dir / META_PROPERTIES
    if not path.exists():
        return None
    props = read_properties(path)
    if "version" not in props:
        raise CorruptCheckpointError(f"{path} has no version")
    return props


def ensure_zk_log_dirs(log_dirs: Sequence[Path], broker_id: int, cluster_id: str) -> None:
    """A ZooKeeper-mode broker's start-up check: every dir holds version-0 meta.properties
    for this broker and the cluster ZooKeeper names; a dir without one gets it."""
    for raw in log_dirs:
        log_dir = Path(raw)
        log_dir.mkdir(parents=True, exist_ok=True)
        props = _read_meta(log_dir)
        if props is None:
            body = (
                "#\n"
                f"#{time.strftime('%a %b %d %H:%M:%S %Z %Y')}\n"
                f"broker.id={broker_id}\n"
                f"cluster.id={cluster_id}\n"
                f"version={ZK_META_VERSION}\n"
            )
            atomic_write_text(log_dir / META_PROPERTIES, body)
            continue
        path = log_dir / META_PROPERTIES
        if props["version"] != str(ZK_META_VERSION):
            raise InconsistentStorageError(
                f"{path} has version={props['version']}: the dir was formatted for a KRaft "
                "node and a ZooKeeper-mode broker cannot use it"
            )
        stored_cluster = props.get("cluster.id")
        if stored_cluster is not None and stored_cluster != cluster_id:
            raise InconsistentStorageError(
                f"The Cluster ID {cluster_id} doesn't match stored clusterId {stored_cluster} "
                f"in {path}. The broker is trying to join the wrong cluster. Configured "
                "zookeeper.connect may be wrong."
            )
        stored_broker = props.get("broker.id")
        if stored_broker is not None and stored_broker != str(broker_id):
            raise InconsistentStorageError(
                f"Configured broker.id {broker_id} doesn't match stored broker.id "
                f"{stored_broker} in {path}. If you moved your data, make sure your "
                "configured broker.id matches."
            )


def format_log_dirs(
    log_dirs: Sequence[Path], cluster_id: str, node_id: int, ignore_formatted: bool = False
) -> list[Path]:
    """Write meta.properties into every dir; returns the dirs that were newly formatted."""
    uuid_from_str(cluster_id)  # a typo in the cluster id should fail here, not at startup
    formatted: list[Path] = []
    for raw in log_dirs:
        log_dir = Path(raw)
        existing = read_meta_properties(log_dir) if log_dir.exists() else None
        if existing is not None:
            if existing["cluster.id"] != cluster_id:
                raise InconsistentStorageError(
                    f"{log_dir} is already formatted for cluster.id {existing['cluster.id']}, "
                    f"not {cluster_id}"
                )
            if not ignore_formatted:
                raise InconsistentStorageError(
                    f"Log directory {log_dir} is already formatted. Use --ignore-formatted "
                    "to ignore this directory and format the others."
                )
            if existing["node.id"] != str(node_id):
                raise InconsistentStorageError(
                    f"{log_dir} is already formatted for node.id {existing['node.id']}, "
                    f"not {node_id}"
                )
            continue
        log_dir.mkdir(parents=True, exist_ok=True)
        write_meta_properties(log_dir, cluster_id, node_id)
        formatted.append(log_dir)
    return formatted


def check_log_dirs(log_dirs: Sequence[Path], node_id: int, cluster_id: str | None = None) -> str:
    """Verify every dir is formatted for this node and one cluster; return the cluster id."""
    seen: str | None = cluster_id
    for raw in log_dirs:
        log_dir = Path(raw)
        props = read_meta_properties(log_dir) if log_dir.is_dir() else None
        if props is None:
            raise StorageNotFormattedError(
                f"No meta.properties found in {log_dir} (have you run `brownout storage format`?)"
            )
        if props["node.id"] != str(node_id):
            raise InconsistentStorageError(
                f"Stored node id {props['node.id']} in {log_dir / META_PROPERTIES} doesn't "
                f"match previous node id {node_id}"
            )
        if seen is not None and props["cluster.id"] != seen:
            raise InconsistentStorageError(
                f"Invalid cluster.id in {log_dir / META_PROPERTIES}. Expected {seen}, "
                f"but read {props['cluster.id']}"
            )
        seen = props["cluster.id"]
    if seen is None:
        raise StorageNotFormattedError("no log directories configured")
    return seen


__all__ = [
    "check_log_dirs",
    "ensure_zk_log_dirs",
    "format_log_dirs",
    "random_uuid",
    "read_meta_properties",
    "topic_id_from_str",
    "topic_id_to_str",
    "uuid_from_str",
    "uuid_to_str",
]

