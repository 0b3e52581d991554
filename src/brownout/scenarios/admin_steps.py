"""Admin steps of a schedule: alter-config, create-partitions and elect-leaders.

Each is what an operator would do by hand mid-incident (`brownout configs --alter`,
`brownout topics alter --partitions`, `brownout leader-election`), sent with the same
admin code at its time. The specs are parsed in schema.py; here they are described and
run. An outcome is Jepsen's: ok (done), fail (the cluster said no: nothing changed), or
info (no answer in time: it may or may not have happened).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from typing import Any

from ..cluster.admin import AdminError

ACTIONS = ("alter-config", "create-partitions", "elect-leaders")
DEFAULT_BROKER = "default"  # how a scenario names the cluster-wide broker default
_PARTITION = re.compile(r"(.+)-([0-9]+)")


@dataclasses.dataclass(frozen=True)
class AlterConfigSpec:
    topic: str | None = None
    broker: str | None = None  # a broker id, or "default"
    set: Mapping[str, str] = dataclasses.field(default_factory=dict)
    delete: tuple[str, ...] = ()

    @property
    def entity(self) -> tuple[str, str]:
        """(kafka-configs.sh's entity type, the resource name; "" for the default)."""
        if self.topic is not None:
            return "topics", self.topic
        return "brokers", "" if self.broker == DEFAULT_BROKER else str(self.broker)

    def describe(self) -> str:
        what = f"topic {self.topic}" if self.topic is not None else f"broker {self.broker}"
        changes = [f"{k}={v}" for k, v in self.set.items()] + [f"-{k}" for k in self.delete]
        return f"alter-config {what} {' '.join(changes)}"


@dataclasses.dataclass(frozen=True)
class CreatePartitionsSpec:
    topic: str
    count: int

    def describe(self) -> str:
        return f"create-partitions {self.topic} count={self.count}"


@dataclasses.dataclass(frozen=True)
class ElectLeadersSpec:
    type: str  # preferred | unclean
    partitions: tuple[tuple[str, int], ...] | None = None  # None: all

    def describe(self) -> str:
        which = "all" if self.partitions is None else ",".join(
            f"{t}-{p}" for t, p in self.partitions)
        return f"elect-leaders {self.type} {which}"


def parse_partition(text: str) -> tuple[str, int]:
    """`orders-0` -> ("orders", 0); the topic is everything before the last dash."""
    m = _PARTITION.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"{text!r} is not TOPIC-PARTITION, e.g. orders-0")
    return m.group(1), int(m.group(2))


def outcome_of(error: str) -> str:
    """An admin error's outcome: info when the request timed out (it may have been
    applied), fail when the cluster refused it."""
    return "info" if "TIMED_OUT" in error.upper() or "timed out" in error else "fail"


def election_outcome(results: Mapping[tuple[str, int], str | None]) -> tuple[str, str | None]:
    """ok when every partition was elected or needed no election."""
    failed = {f"{t}-{p}": e for (t, p), e in sorted(results.items())
              if e is not None and not e.startswith("ELECTION_NOT_NEEDED")}
    if not failed:
        return "ok", None
    text = "; ".join(f"{tp}: {e}" for tp, e in failed.items())
    return outcome_of(text), text


def params_json(spec: Any) -> str:
    return json.dumps(dataclasses.asdict(spec), default=list, separators=(",", ":"))


# -- I/O ------------------------------------------------------------------------------


def run(spec: AlterConfigSpec | CreatePartitionsSpec | ElectLeadersSpec, bootstrap: str,
        timeout: float) -> tuple[str, str | None, Any]:
    """(outcome, error text or None, what the cluster answered worth keeping)."""
    from ..cluster.groups import GroupAdmin

    try:
        if isinstance(spec, AlterConfigSpec):
            from ..cluster.configs import ConfigAdmin

            kind, name = spec.entity
            ConfigAdmin(bootstrap, timeout).alter(kind, name, dict(spec.set), spec.delete)
            return "ok", None, None
        if isinstance(spec, CreatePartitionsSpec):
            GroupAdmin(bootstrap, timeout).alter_partitions(spec.topic, spec.count)
            return "ok", None, None
        results = GroupAdmin(bootstrap, timeout).elect_leaders(
            spec.type == "unclean", None if spec.partitions is None else list(spec.partitions))
        outcome, error = election_outcome(results)
        return outcome, error, {f"{t}-{p}": e for (t, p), e in sorted(results.items())}
    except AdminError as e:
        return outcome_of(str(e)), str(e), None
