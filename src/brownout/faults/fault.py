"""A fault as asked (`Fault`) and as done (`FaultResult`), the two ways an executor says
it did not do it (`Failed`, `Indeterminate`), and the helpers they share to read params
and name nodes in messages."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any

from .targets import describe_id, zookeeper_server


@dataclasses.dataclass(frozen=True)
class Fault:
    """What to do: an action, a target spec (see targets.py) and action params."""

    action: str
    target: str | None = None
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "target": self.target, "params": dict(self.params)}


@dataclasses.dataclass
class FaultResult:
    """What happened: the history event's value (`value()`)."""

    action: str
    target: str | None
    nodes: tuple[int, ...]  # targets as resolved at fault time
    start: float  # wall clock (time.time())
    end: float
    outcome: str  # ok | fail | info
    message: str
    details: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def duration(self) -> float:
        return max(0.0, self.end - self.start)

    def value(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "target": self.target,
            "nodes": list(self.nodes),
            "outcome": self.outcome,
            "message": self.message,
            "start": round(self.start, 6),
            "end": round(self.end, 6),
            "duration_s": round(self.duration, 3),
            **self.details,
        }

    def to_json(self) -> str:
        return json.dumps(self.value(), default=str, sort_keys=False)


class Failed(Exception):
    """The fault certainly did not happen (outcome fail); raised by the executors."""


class Indeterminate(Exception):
    """The fault may or may not have fully happened (outcome info)."""


def down_param(fault: Fault) -> float:
    """The ``down`` param of a restart: seconds a node stays stopped (>= 0)."""
    raw = fault.params.get("down", 0.0)
    try:
        down = float(raw)
    except (TypeError, ValueError):
        raise Failed(f"down must be a number of seconds, got {raw!r}") from None
    if down < 0:
        raise Failed(f"down must be >= 0 seconds, got {down:g}")
    return down


def server_id(target_id: int) -> int:
    server = zookeeper_server(target_id)
    assert server is not None, f"{target_id} is not a ZooKeeper server"
    return server


def size_param(raw: Any) -> int:
    """A byte count: bytes, or a number with KiB / MiB / GiB (k, m, g also)."""
    text = str(raw).strip()
    units = {"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "k": 1 << 10, "m": 1 << 20,
             "g": 1 << 30}
    for suffix, factor in sorted(units.items(), key=lambda kv: -len(kv[0])):
        if text.lower().endswith(suffix) and text[: -len(suffix)].strip().isdigit():
            return int(text[: -len(suffix)]) * factor
    if text.isdigit():
        return int(text)
    raise Failed(f"free must be bytes or a number with KiB, MiB or GiB, got {raw!r}")


def ids(nodes: Iterable[int]) -> str:
    return ", ".join(map(describe_id, nodes)) or "none"


def not_running(details: dict[str, Any]) -> str:
    missing = details.get("not_running") or []
    return f" (not running: {ids(missing)})" if missing else ""
