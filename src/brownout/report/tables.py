"""The report's tables: lost writes with their evidence, the per-partition print-hw
view, the verdict and its expectations, rebalances, and the run's header (scenario,
cluster topology, node logs). Inputs are check.json / verdict.json / run.json as parsed
JSON (or the checkers' lost-writes table); nothing here reads the history.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..check.rebalances import not_counted_because
from ..common.rundir import (
    CHECK_FILE,
    CLUSTER_DIR,
    CLUSTER_STATE_FILE,
    NODE_LOG,
    NODES_DIR,
    VERDICT_FILE,
    node_dir_name,
    node_dirs,
)

DEFAULT_LOSS_ROWS = 300


# -- lost writes ------------------------------------------------------------------------

LOSS_COLUMNS = ("msg_id", "topic", "partition", "offset", "acks", "completed", "reason")


@dataclasses.dataclass
class LossTable:
    total: int  # lost writes in the run
    rows: list[dict[str, Any]]  # at most `limit`, in acknowledgement order
    by_reason: dict[str, int]
    by_acks: dict[str, int]
    source: str  # where the rows came from
    complete: bool  # rows + the truncation cover every lost write (else: examples only)

    @property
    def truncated(self) -> bool:
        return len(self.rows) < self.total


def _fmt_t(x: Any) -> str:
    return "?" if x is None else f"{float(x):.2f}s"


def evidence_text(row: Mapping[str, Any]) -> str:
    """One line of evidence for a lost write, from the columns explain_lost_writes adds."""
    parts = []
    if row.get("leader") is not None or row.get("sample_time") is not None:
        isr = row.get("isr")
        isr_text = "[" + ",".join(map(str, isr)) + "]" if isinstance(isr, list | tuple) else "?"
        parts.append(f"at {_fmt_t(row.get('sample_time'))}: leader {row.get('leader')} "
                     f"epoch {row.get('leader_epoch')} ISR {isr_text}")
    if row.get("epoch_ended_at") is not None:
        parts.append(f"epoch ended {_fmt_t(row['epoch_ended_at'])} -> leader "
                     f"{row.get('new_leader')} epoch {row.get('new_epoch')}")
    if row.get("record_at_offset") is not None:
        parts.append(f"offset now holds {row['record_at_offset']}")
    elif row.get("log_end") is not None and row.get("offset") is not None and (
            row["offset"] >= row["log_end"]):
        parts.append(f"log ends at {row['log_end']}")
    if row.get("fault_action") == "power-loss":
        parts.append(f"power lost on every ISR member (back at {_fmt_t(row.get('fault_time'))})")
    elif row.get("fault_action"):
        parts.append(f"{row['fault_action']} of leader at {_fmt_t(row.get('fault_time'))}")
    if row.get("isolated_since") is not None:
        parts.append(f"leader isolated ({row.get('isolation_action')}) since "
                     f"{_fmt_t(row['isolated_since'])}")
    if not parts and row.get("acks") == "0":
        parts.append("acks=0: never acknowledged by a broker")
    return "; ".join(parts) or "no observer sample before the acknowledgement"


def _count_by(rows: list[dict[str, Any]], key: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        k = str(r.get(key))
        out[k] = out.get(k, 0) + 1
    return out


ACKS_ORDER = {"all": 0, "-1": 0, "1": 1, "0": 2}


def _group_key(acks: Any, reason: Any) -> tuple[int, str, str]:
    return (ACKS_ORDER.get(str(acks), 3), str(acks), str(reason))


def _quotas(sizes: Mapping[Any, int], limit: int) -> dict[Any, int]:
    """Share `limit` rows among groups: every group gets an equal share (water-filling:
    what a small group does not use goes to the others)."""
    quotas = dict.fromkeys(sizes, 0)
    left = limit
    open_ = sorted(k for k, n in sizes.items() if n > 0)
    while left > 0 and open_:
        share = max(1, left // len(open_))
        for k in list(open_):
            take = min(share, sizes[k] - quotas[k], left)
            quotas[k] += take
            left -= take
            if quotas[k] >= sizes[k]:
                open_.remove(k)
            if left <= 0:
                break
    return quotas


def loss_table(lost: pa.Table | list[dict[str, Any]] | None, *, total: int | None = None,
               by_reason: Mapping[str, int] | None = None,
               by_acks: Mapping[str, int] | None = None, source: str = "report",
               limit: int = DEFAULT_LOSS_ROWS) -> LossTable:
    """At most `limit` lost writes with an `evidence` text: the strictest acks level first
    (all, 1, 0), then by reason, then by acknowledgement time; when they do not all fit,
    every (acks, reason) group keeps an equal share, so a flood of acks=0 losses cannot
    hide one lost acks=all write. `total` / `by_reason` / `by_acks` default to what
    `lost` holds."""
    if lost is None:
        rows: list[dict[str, Any]] = []
        n_all = 0
        counts_r: dict[str, int] = {}
        counts_a: dict[str, int] = {}
    elif isinstance(lost, pa.Table):
        n_all = len(lost)
        counts_r = _arrow_counts(lost, "reason")
        counts_a = _arrow_counts(lost, "acks")
        rows = _pick_arrow(lost, limit)
    else:
        n_all = len(lost)
        counts_r, counts_a = _count_by(lost, "reason"), _count_by(lost, "acks")
        rows = _pick_rows([dict(r) for r in lost], limit)
    for r in rows:
        r.setdefault("reason", None)
        r["evidence"] = evidence_text(r)
    n = n_all if total is None else total
    return LossTable(total=n, rows=rows, by_reason=dict(by_reason or counts_r),
                     by_acks=dict(by_acks or counts_a), source=source,
                     complete=n_all >= n)


def _row_order(r: Mapping[str, Any]) -> tuple:
    return (*_group_key(r.get("acks"), r.get("reason")), r.get("completed") is None,
            r.get("completed") or 0.0, str(r.get("msg_id")))


def _pick_rows(rows: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in sorted(rows, key=_row_order):
        groups.setdefault(_group_key(r.get("acks"), r.get("reason")), []).append(r)
    quotas = _quotas({k: len(v) for k, v in groups.items()}, limit)
    return [r for k in sorted(groups) for r in groups[k][:quotas[k]]]


def _pick_arrow(lost: pa.Table, limit: int) -> list[dict[str, Any]]:
    """Like _pick_rows, touching only the rows that are kept (a run can lose millions)."""
    if len(lost) == 0:
        return []
    acks = lost["acks"] if "acks" in lost.column_names else pa.nulls(len(lost), pa.string())
    reason = (lost["reason"] if "reason" in lost.column_names
              else pa.nulls(len(lost), pa.string()))
    keys = pa.table({"acks": pc.cast(acks, pa.string()), "reason": pc.cast(reason, pa.string())})
    agg = keys.group_by(["acks", "reason"]).aggregate([([], "count_all")]).to_pylist()
    sizes = {_group_key(g["acks"], g["reason"]): g["count_all"] for g in agg}
    quotas = _quotas(sizes, limit)
    out: list[dict[str, Any]] = []
    for g in agg:
        k = _group_key(g["acks"], g["reason"])
        if not quotas.get(k):
            continue
        mask = pc.and_kleene(_same(keys["acks"], g["acks"]), _same(keys["reason"], g["reason"]))
        part = lost.filter(pc.fill_null(mask, False))
        if "completed" in part.column_names:
            part = part.sort_by([("completed", "ascending"), ("msg_id", "ascending")]
                                if "msg_id" in part.column_names
                                else [("completed", "ascending")])
        out.extend(part.slice(0, quotas[k]).to_pylist())
    out.sort(key=_row_order)
    return out


def _same(column: Any, value: Any) -> Any:
    return pc.is_null(column) if value is None else pc.equal(column, value)


def _arrow_counts(table: pa.Table, column: str) -> dict[str, int]:
    if len(table) == 0 or column not in table.column_names:
        return {}
    return {str(c["values"]): c["counts"] for c in pc.value_counts(table[column]).to_pylist()}


# -- check.json, verdict.json and friends ---------------------------------------------


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def read_json_values(text: str) -> list[Any]:
    """Concatenated JSON values (JSON lines, or pretty-printed objects one after another,
    as `brownout fault ... --json >> faults.jsonl` leaves them); stops at a torn one."""
    decoder = json.JSONDecoder()
    out: list[Any] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return out
        try:
            value, i = decoder.raw_decode(text, i)
        except ValueError:
            return out
        out.extend(value if isinstance(value, list) else [value])


def result_numbers(check: Mapping[str, Any] | None, checker: str) -> dict[str, Any]:
    if not check:
        return {}
    return ((check.get("results") or {}).get(checker) or {}).get("numbers") or {}


def print_hw(check: Mapping[str, Any] | None, watermarks: Mapping[str, Any] | None,
             acked_by_partition: Mapping[tuple[str | None, int], int] | None = None
             ) -> list[dict[str, Any]]:
    """Per partition: sent, acknowledged, lost, high watermark, log start, records (from
    check.json's writes numbers; else high-watermarks.json with acks counted here)."""
    rows = result_numbers(check, "writes").get("partitions")
    complete: dict[tuple[Any, Any], Any] = {}
    for topic, parts in ((watermarks or {}).get("topics") or {}).items():
        for p, info in parts.items():
            complete[(topic, int(p))] = info
    if isinstance(rows, list) and rows:
        out = []
        for r in rows:
            r = dict(r)
            info = complete.get((r.get("topic"), r.get("partition")), {})
            r["read_complete"] = info.get("complete")
            r["error"] = info.get("error")
            out.append(r)
        return out
    out = []
    acked = acked_by_partition or {}
    keys = sorted(set(complete) | set(acked), key=lambda k: (str(k[0]), k[1]))
    for key in keys:
        info = complete.get(key, {})
        out.append({"topic": key[0], "partition": key[1], "sent": None,
                    "acknowledged": acked.get(key), "lost": None,
                    "high_watermark": info.get("high_watermark"),
                    "log_start": info.get("log_start"),
                    "records_in_log": info.get("records"),
                    "read_complete": info.get("complete"), "error": info.get("error")})
    return out


@dataclasses.dataclass
class Expectation:
    name: str
    expected: Any
    observed: Any
    passed: bool | str | None
    detail: str = ""


@dataclasses.dataclass
class Verdict:
    passed: bool | str | None  # True, False, "unknown"; None: nothing checked this run
    source: str  # verdict.json | check.json | none
    expectations: list[Expectation]
    reason: str | None = None  # why the verdict is unknown (e.g. "lab overloaded: ...")

    @property
    def word(self) -> str:
        if self.passed is True:
            return "PASS"
        if self.passed is False:
            return "FAIL"
        return "UNKNOWN" if self.passed == "unknown" else "NOT CHECKED"


def _describe_anomalies(result: Mapping[str, Any]) -> str:
    found = result.get("anomalies") or {}
    parts = [f"{name}={a.get('count')}{' (allowed)' if a.get('allowed') else ''}"
             for name, a in found.items()]
    return ", ".join(parts)


def verdict_from(verdict_json: Mapping[str, Any] | None,
                 check: Mapping[str, Any] | None) -> Verdict:
    """verdict.json when the scenario runner wrote one, else check.json's valid with one
    row per checker."""
    if isinstance(verdict_json, Mapping) and "passed" in verdict_json:
        exps = []
        for e in verdict_json.get("expectations") or []:
            if isinstance(e, Mapping):
                exps.append(Expectation(str(e.get("name", "?")), e.get("expected"),
                                        e.get("observed"), e.get("passed"),
                                        str(e.get("detail") or "")))
        passed = verdict_json.get("passed")
        reason = verdict_json.get("unknown_reason")
        return Verdict(passed if passed in (True, False, "unknown") else bool(passed),
                       VERDICT_FILE, exps, str(reason) if reason else None)
    if not check:
        return Verdict(None, "none", [])
    exps = []
    for name, result in (check.get("results") or {}).items():
        valid = result.get("valid")
        anomalies = _describe_anomalies(result)
        if result.get("error"):
            observed = f"unknown: {result['error']}"
        else:
            observed = "valid" if valid is True else ("invalid" if valid is False
                                                      else str(valid))
        detail = anomalies or "no anomalies"
        if name == "availability":
            w = (result.get("numbers") or {}).get("longest_unavailable_acks_all") or {}
            if w.get("seconds") is not None:
                detail += f"; longest acks=all unavailability {w['seconds']:.2f}s"
        exps.append(Expectation(f"{name} checker", "valid", observed,
                                valid if valid in (True, False) else "unknown", detail))
    valid = check.get("valid")
    return Verdict(valid if valid in (True, False) else "unknown", CHECK_FILE, exps)


@dataclasses.dataclass
class Rebalance:
    group: str
    start: float
    duration: float | None
    members: int
    partitions_revoked: int
    # why it is not one of the run's rebalances (members joining, consumers closing)
    not_counted: str | None = None


def rebalances(check: Mapping[str, Any] | None,
               verdict: Mapping[str, Any] | None = None) -> list[Rebalance]:
    """The checker's rebalance episodes; verdict.json (first fault, consumers' stop) says
    which are not the run's doing, as the `rebalances` expectation counts them."""
    groups = result_numbers(check, "rebalances").get("groups") or {}
    verdict = verdict or {}
    first_fault = (verdict.get("fault_window") or [None])[0]
    stopped = verdict.get("consumers_stopped")
    out = []
    for group, g in groups.items():
        for e in g.get("episodes") or []:
            out.append(Rebalance(str(group), float(e.get("start") or 0.0), e.get("duration"),
                                 len(e.get("members") or []),
                                 int(e.get("partitions_revoked") or 0),
                                 not_counted_because(e.get("start"), first_fault=first_fault,
                                                     consumers_stopped=stopped)))
    out.sort(key=lambda r: r.start)
    return out


# -- header: scenario, topology, logs ---------------------------------------------------


@dataclasses.dataclass
class NodeLog:
    name: str
    href: str  # relative to the run directory
    exists: bool
    size: int | None = None


@dataclasses.dataclass
class Header:
    run_id: str
    scenario: str
    started: float | None  # wall clock
    duration: float
    topology: str
    nodes: list[dict[str, Any]]
    bootstrap: str
    topics: list[str]
    workload: list[str]
    description: str = ""
    error: str | None = None  # the scenario runner's: why the run could not complete


def cluster_state(run_dir: Path, info: Mapping[str, Any]) -> tuple[dict[str, Any] | None,
                                                                    Path | None]:
    """The cluster.json this run used: one in the run directory (a scenario may copy it
    there), else the one in the --dir its commands named."""
    candidates = [run_dir / CLUSTER_STATE_FILE, run_dir / CLUSTER_DIR / CLUSTER_STATE_FILE]
    for entry in info.get("commands") or []:
        d = (entry.get("params") or {}).get("directory")
        if d:
            candidates.append(Path(d) / CLUSTER_STATE_FILE)
    if info.get("cluster_dir"):
        candidates.append(Path(info["cluster_dir"]) / CLUSTER_STATE_FILE)
    for path in candidates:
        data = read_json(path)
        if isinstance(data, dict) and "nodes" in data:
            return data, path.parent
    return None, None


def describe_external(external: Mapping[str, Any]) -> str:
    """The cluster of a run on an external cluster, from its external.json."""
    brokers = ", ".join(map(str, external.get("registered_brokers") or [])) or "none"
    return (f"external cluster at {external.get('bootstrap')} (registered brokers {brokers} "
            f"at the start; nodes file {external.get('nodes_file')})")


def describe_topology(cluster: Mapping[str, Any] | None,
                      scenario: Mapping[str, Any] | None = None
                      ) -> tuple[str, list[dict[str, Any]]]:
    """A one-line description and the nodes (id, roles, log) from cluster.json; else
    what scenario.json asked for."""
    if not cluster:
        spec = (scenario or {}).get("cluster")
        if isinstance(spec, Mapping):
            mode = "combined" if spec.get("combined") else "dedicated"
            return (f"{spec.get('brokers')} brokers, {spec.get('controllers')} {mode} "
                    f"controller(s), profile {spec.get('profile')}, network "
                    f"{spec.get('network', 'loopback')} (from scenario.json)"), []
        return "unknown (no cluster.json found for this run)", []
    nodes = []
    for n in cluster.get("nodes") or []:
        nodes.append({"id": n.get("node_id"), "roles": list(n.get("roles") or []),
                      "log": n.get("log_path")})
    brokers = [n["id"] for n in nodes if "broker" in n["roles"]]
    controllers = [n["id"] for n in nodes if "controller" in n["roles"]]
    topo = cluster.get("topology") or {}
    combined = bool(topo.get("combined"))
    text = (f"{len(brokers)} broker{'s' if len(brokers) != 1 else ''} "
            f"({', '.join(map(str, brokers))}), {len(controllers)} "
            f"{'combined' if combined else 'dedicated'} controller"
            f"{'s' if len(controllers) != 1 else ''} ({', '.join(map(str, controllers))})")
    extras = []
    if topo.get("profile"):
        extras.append(f"profile {topo['profile']}")
    if topo.get("network"):
        extras.append(f"network {topo['network']}")
    if extras:
        text += ", " + ", ".join(extras)
    return text, nodes


def workload_lines(info: Mapping[str, Any]) -> list[str]:
    lines = []
    for entry in info.get("commands") or []:
        for p in entry.get("producers") or []:
            text = (f"{p.get('producers', 1)} producer(s) {p.get('workload')} -> "
                    f"{p.get('topic')}, acks={p.get('acks')}")
            if p.get("rate"):
                text += f", {p['rate']:g} msg/s" if isinstance(p["rate"], int | float) else (
                    f", {p['rate']} msg/s")
            if p.get("duration"):
                text += f", {p['duration']}s"
            if p.get("idempotent"):
                text += ", idempotent"
            lines.append(text)
        for c in entry.get("consumers") or []:
            topics = c.get("topics")
            topics = ", ".join(topics) if isinstance(topics, list) else topics
            lines.append(f"{c.get('consumers', 1)} consumer(s) in group {c.get('group')} "
                         f"<- {topics}")
    return lines


def scenario_name(run_dir: Path, info: Mapping[str, Any],
                   verdict_json: Mapping[str, Any] | None) -> str:
    for source in (verdict_json or {}, info):
        s = source.get("scenario")
        if isinstance(s, Mapping) and s.get("name"):
            return str(s["name"])
        if isinstance(s, str) and s:
            return s
    if info.get("name"):
        return str(info["name"])
    commands = [str(e.get("command")) for e in info.get("commands") or [] if e.get("command")]
    return f"{run_dir.name} ({' + '.join(commands) or 'run'})"


def _rel(path: Path, base: Path) -> str:
    return Path(os.path.relpath(path, base)).as_posix()


def node_logs(run_dir: Path, nodes: list[dict[str, Any]], cluster_dir: Path | None
              ) -> list[NodeLog]:
    """Node logs (relative links), the run's client log and logs a scenario copied into
    the run directory (logs/ or node-*/)."""
    out: list[NodeLog] = []
    seen: set[Path] = set()

    def add(name: str, path: Path) -> None:
        real = path.resolve()
        if real in seen:
            return
        seen.add(real)
        exists = path.exists()
        out.append(NodeLog(name, _rel(path, run_dir), exists,
                           path.stat().st_size if exists else None))

    copied = {}  # node id -> the copy of its log the scenario runner kept in nodes/
    for node, directory in node_dirs(run_dir / NODES_DIR).items():
        if (directory / NODE_LOG).exists():
            copied[str(node)] = directory / NODE_LOG
    known = {str(n.get("id")) for n in nodes}
    local = sorted(run_dir.glob("logs/**/*.log"))
    local += sorted(p for d in node_dirs(run_dir).values() for p in d.glob("*.log"))
    local += [p for k, p in copied.items() if k not in known]
    for path in local:
        add(_rel(path, run_dir), path)
    for n in nodes:
        if str(n.get("id")) in copied:
            add(f"node {n['id']} ({'+'.join(n['roles'])})", copied[str(n["id"])])
        elif n.get("log"):
            add(f"node {n['id']} ({'+'.join(n['roles'])})", Path(n["log"]))
        elif cluster_dir is not None:
            add(f"node {n['id']}", cluster_dir / node_dir_name(n["id"]) / NODE_LOG)
    if (run_dir / "clients.log").exists():
        add("clients (librdkafka)", run_dir / "clients.log")
    return out
