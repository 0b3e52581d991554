"""What a checker returns, what a scenario tolerates, and how verdicts compose.

Jepsen's rules: `valid` is True, False or "unknown"; a checker that crashes yields
"unknown", never True; composing gives False if any part is False, else "unknown" if any
part is unknown, else True. Anomalies are keyed by name, each with a count and a few
examples, and the expectations decide which names a configuration tolerates.
"""

from __future__ import annotations

import dataclasses
import math
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

Valid = bool | Literal["unknown"]
UNKNOWN: Literal["unknown"] = "unknown"

# Anomaly names (Jepsen's Kafka checker vocabulary where it fits).
LOST_WRITE = "lost-write"  # acknowledged, missing from the final log
UNEXPECTED_WRITE = "unexpected-write"  # indeterminate or never completed, yet present
G1A = "G1a"  # failed with a definite error, yet present
PHANTOM_WRITE = "phantom-write"  # present in the log, never sent by any producer
DUPLICATE = "duplicate"  # one msg_id at several offsets of the log
INCONSISTENT_OFFSETS = "inconsistent-offsets"  # acked at (p, X); the log disagrees
PRODUCER_REORDER = "producer-reorder"  # one producer's seq order broken in a partition
KEY_REORDER = "key-reorder"  # within a key, a later send sits before an earlier ack
CONSUMED_THEN_MISSING = "consumed-then-missing"  # delivered, later missing from the log
POLL_SKIP = "poll-skip"  # a group read past records that no member ever received
DUPLICATE_DELIVERY = "duplicate-delivery"  # one offset delivered twice within a group
UNAVAILABLE = "unavailable"  # no successful acks=all write for longer than tolerated

ANOMALIES = (
    LOST_WRITE, UNEXPECTED_WRITE, G1A, PHANTOM_WRITE, DUPLICATE, INCONSISTENT_OFFSETS,
    PRODUCER_REORDER, KEY_REORDER, CONSUMED_THEN_MISSING, POLL_SKIP, DUPLICATE_DELIVERY,
    UNAVAILABLE,
)


@dataclasses.dataclass(frozen=True)
class Expectations:
    """Which anomalies a scenario tolerates.

    `allowed` names anomalies that never make a verdict invalid. Lost writes are judged
    per acks level: they are tolerated only for the levels in `lost_writes_tolerated`
    (acks=0 and acks=1 by default; acks=all never, unless a scenario says so).
    `max_unavailable_seconds` bounds the longest window without a successful acks=all
    write while sends were attempted (None: availability is reported, not judged).
    """

    allowed: frozenset[str] = frozenset({UNEXPECTED_WRITE, DUPLICATE_DELIVERY})
    lost_writes_tolerated: frozenset[str] = frozenset({"0", "1"})
    max_examples: int = 8
    max_unavailable_seconds: float | None = None

    @classmethod
    def strict(cls) -> Expectations:
        """Nothing tolerated except unacknowledged writes being present."""
        return cls(allowed=frozenset({UNEXPECTED_WRITE}), lost_writes_tolerated=frozenset())

    def allows(self, name: str) -> bool:
        return name in self.allowed

    def to_dict(self) -> dict[str, Any]:
        return {"allowed": sorted(self.allowed),
                "lost_writes_tolerated": sorted(self.lost_writes_tolerated),
                "max_examples": self.max_examples,
                "max_unavailable_seconds": self.max_unavailable_seconds}


@dataclasses.dataclass
class Anomaly:
    """A named anomaly: how many, a few examples, and whether the scenario allows it."""

    name: str
    count: int
    examples: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    allowed: bool = False
    detail: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return jsonable({"count": self.count, "allowed": self.allowed,
                         "examples": self.examples, **self.detail})


@dataclasses.dataclass
class CheckResult:
    """One checker's verdict with its evidence.

    `valid` is False when any anomaly the expectations do not allow has a non-zero count;
    "unknown" when the checker crashed (`error` says why) or could not decide.
    """

    checker: str
    valid: Valid
    anomalies: dict[str, Anomaly] = dataclasses.field(default_factory=dict)
    numbers: dict[str, Any] = dataclasses.field(default_factory=dict)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "valid": self.valid,
            "anomalies": {n: a.to_dict() for n, a in self.anomalies.items() if a.count},
            "numbers": jsonable(self.numbers),
        }
        if self.error is not None:
            out["error"] = self.error
        return out


def judge(checker: str, anomalies: Iterable[Anomaly], numbers: dict[str, Any]) -> CheckResult:
    found = {a.name: a for a in anomalies}
    valid = not any(a.count and not a.allowed for a in found.values())
    return CheckResult(checker, valid, found, numbers)


def compose(results: Iterable[CheckResult]) -> Valid:
    """False dominates, then unknown, then True (an empty composition is unknown)."""
    seen = [r.valid for r in results]
    if not seen:
        return UNKNOWN
    if any(v is False for v in seen):
        return False
    if any(v == UNKNOWN for v in seen):
        return UNKNOWN
    return True


def guarded(checker: str, fn: Callable[..., CheckResult], *args: Any,
            **kwargs: Any) -> CheckResult:
    """Run a checker; a crash becomes valid="unknown" with the error, never True."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # a checker's crash is a verdict, not an outage
        last = traceback.extract_tb(exc.__traceback__)[-1:]
        where = f" at {last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno}" if last else ""
        return CheckResult(checker, UNKNOWN, error=f"{type(exc).__name__}: {exc}{where}")


def jsonable(value: Any) -> Any:
    """Plain JSON types: tuples become lists, NaN/inf become None, keys become strings."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value) if isinstance(value, set | frozenset) else value
        return [jsonable(v) for v in items]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if hasattr(value, "as_py"):
        return jsonable(value.as_py())
    if hasattr(value, "to_dict"):
        return jsonable(value.to_dict())
    return str(value)


@dataclasses.dataclass
class Report:
    """The composed verdict of one run: every checker's result and the expectations."""

    valid: Valid
    results: dict[str, CheckResult]
    expectations: Expectations
    numbers: dict[str, Any] = dataclasses.field(default_factory=dict)
    # Every acknowledged-but-lost write with its reason and evidence (an Arrow table);
    # to_dict() keeps only the counts and the anomaly's examples.
    lost_writes: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "expectations": self.expectations.to_dict(),
            "numbers": jsonable(self.numbers),
            "results": {name: r.to_dict() for name, r in self.results.items()},
        }
