"""Admin steps of a schedule: alter-config, create-partitions, elect-leaders, reassign.

Each is what an operator would do by hand mid-incident (`brownout configs --alter`,
`brownout topics alter --partitions`, `brownout leader-election`, `brownout
reassign-partitions`), sent with the same admin code at its time. A reassign step also
waits (within its timeout) until the reassignment has completed, so its outcome says
whether it did: ok only then, info when still in progress at the timeout. The specs are
parsed in schema.py; here they are described and run. An outcome is Jepsen's: ok (done),
fail (the cluster said no: nothing changed), or info (no answer in time: it may or may
not have happened).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from typing import Any

from ..cluster.admin import AdminError

ACTIONS = ("alter-config", "create-partitions", "elect-leaders", "reassign")
# A reassignment waits for new replicas to catch up: longer than the other steps.
DEFAULT_TIMEOUT = {"reassign": 60.0}
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


@dataclasses.dataclass(frozen=True)
class ReassignSpec:
    topic: str
    replicas: tuple[int, ...] | None  # None: cancel the reassignment in progress
    partitions: tuple[int, ...] | None = None  # None: every partition of the topic

    def describe(self) -> str:
        which = "all" if self.partitions is None else ",".join(map(str, self.partitions))
        to = "cancel" if self.replicas is None else "replicas=" + ",".join(
            map(str, self.replicas))
        return f"reassign {self.topic} partitions={which} {to}"


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


AdminSpec = AlterConfigSpec | CreatePartitionsSpec | ElectLeadersSpec | ReassignSpec


def reassignment_outcome(errors: Mapping[tuple[str, int], str], pending: bool
                         ) -> tuple[str, str | None]:
    """fail when any partition was refused (the others may have moved: Kafka answers
    each on its own); info when accepted but still in progress at the timeout."""
    if errors:
        text = "; ".join(f"{t}-{p}: {e}" for (t, p), e in sorted(errors.items()))
        return outcome_of(text), text
    if pending:
        return "info", "reassignment still in progress at the step's timeout"
    return "ok", None


def _reassign(spec: ReassignSpec, bootstrap: str, timeout: float) -> tuple[str, str | None,
                                                                         Any]:
    import time

    from ..cluster.reassign import Reassigner
    from ..cluster.wire import _error_name

    deadline = time.monotonic() + timeout
    tool = Reassigner(bootstrap, min(timeout, 15.0))
    partitions = spec.partitions
    if partitions is None:
        partitions = tuple(p for _, p in sorted(tool.replicas([spec.topic])))
    targets = {(spec.topic, p): None if spec.replicas is None else list(spec.replicas)
               for p in partitions}
    answers = tool._call("cannot reassign partitions", lambda c: (
        c.alter_partition_reassignments(targets, int(min(timeout, 30.0) * 1000))))
    errors = {tp: message or _error_name(code) for tp, (code, message) in answers.items()
              if code != 0}
    accepted = [tp for tp in targets if tp not in errors]

    def still_moving() -> bool:
        # Done when the controller lists none of them and a broker's metadata (what
        # clients see) shows the target replicas: the commit reaches brokers just after.
        if any(tp in accepted for tp in tool.ongoing(accepted)):
            return True
        now = tool.replicas([spec.topic])
        return any(now.get(tp) != targets[tp] for tp in accepted)

    pending = bool(accepted) and spec.replicas is not None
    while pending and time.monotonic() < deadline:
        pending = still_moving()
        if pending:
            time.sleep(0.25)
    outcome, error = reassignment_outcome(errors, pending)
    after = {f"{t}-{p}": list(r) for (t, p), r in sorted(tool.replicas([spec.topic]).items())
             if p in partitions}
    return outcome, error, {"replicas": after}


def run(spec: AdminSpec, bootstrap: str, timeout: float) -> tuple[str, str | None, Any]:
    """(outcome, error text or None, what the cluster answered worth keeping)."""
    from ..cluster.groups import GroupAdmin

    try:
        if isinstance(spec, ReassignSpec):
            return _reassign(spec, bootstrap, timeout)
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
