"""Consumer-group rebalances from assign/revoke events.

Events f="assign" / f="revoke" (type ok or info) carry value JSON {"group", "member",
"partitions"}; the member defaults to the process. Per group, in time order:

* a revoke while no rebalance is open opens one (it starts at that revoke); later
  revokes join it;
* the first assign after it ends it: duration = that assign - the first revoke;
* assigns that follow from members that revoked in it, before the next revoke, mark when
  it settled (settled_seconds = last such assign - first revoke);
* an assign with no rebalance open and not from such a member is a join (e.g. the
  group's first assignment);
* a rebalance still open when the history ends has no duration (unfinished).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from brownout.check import result as r
from brownout.check.load import HistoryInput, Slices, load_history, parse_value, rows


def check_rebalances(history: HistoryInput | Slices) -> r.CheckResult:
    slices = load_history(history)
    events = [e for e in rows(slices.groups) if e["type"] in ("ok", "info")]
    events.sort(key=lambda e: (e["time"], e["index"]))
    groups: dict[str, dict[str, Any]] = {}
    state: dict[str, dict[str, Any]] = {}
    for e in events:
        value = parse_value(e["value"])
        group = str(value.get("group") or e["process"])
        member = str(value.get("member") or e["process"])
        g = groups.setdefault(group, {"rebalances": 0, "joins": 0, "episodes": []})
        s = state.setdefault(group, {"open": None, "last": None})
        parts = value.get("partitions")
        n_parts = len(parts) if isinstance(parts, list | dict) else None
        if e["f"] == "revoke":
            s["last"] = None
            if s["open"] is None:
                s["open"] = {"start": e["time"], "first_assign": None, "duration": None,
                             "settled_seconds": None, "members": [],
                             "partitions_revoked": 0}
                g["rebalances"] += 1
                g["episodes"].append(s["open"])
            episode = s["open"]
            if member not in episode["members"]:
                episode["members"].append(member)
            episode["partitions_revoked"] += n_parts or 0
        elif e["f"] == "assign":
            episode = s["open"]
            if episode is not None:
                episode["first_assign"] = e["time"]
                episode["duration"] = e["time"] - episode["start"]
                episode["settled_seconds"] = episode["duration"]
                s["open"], s["last"] = None, episode
            elif s["last"] is not None and member in s["last"]["members"]:
                s["last"]["settled_seconds"] = e["time"] - s["last"]["start"]
            else:
                g["joins"] += 1
    for g in groups.values():
        durations = [x["duration"] for x in g["episodes"] if x["duration"] is not None]
        g["durations"] = durations
        g["max_duration"] = max(durations) if durations else None
        g["total_duration"] = sum(durations)
        g["unfinished"] = sum(1 for x in g["episodes"] if x["duration"] is None)
    numbers = {"groups": groups,
               "rebalances": sum(g["rebalances"] for g in groups.values())}
    return r.judge("rebalances", [], numbers)


@dataclasses.dataclass(frozen=True)
class RunRebalances:
    """A run's rebalances as a scenario counts them: the checker's episodes minus those
    that are not the run's doing."""

    counted: tuple[str, ...]  # "group t=12.3s" for each counted episode
    before_faults: int  # started before the first fault: members joining
    at_close: int  # started once the consumers were told to stop: their closing

    @property
    def count(self) -> int:
        return len(self.counted)


# Why an episode is not one of the run's rebalances (None: it is).
JOINING = "members joining"  # before the first fault
CLOSING = "consumers closing"  # once the consumers were told to stop


def not_counted_because(start: float | None, *, first_fault: float | None,
                        consumers_stopped: float | None) -> str | None:
    """The consumers' own close revokes their partitions, and the members' first joins
    come before any fault: neither is a rebalance the run caused (history time; None
    bounds nothing)."""
    if start is None:
        return None
    if consumers_stopped is not None and start >= consumers_stopped:
        return CLOSING
    if first_fault is not None and start < first_fault:
        return JOINING
    return None


def run_rebalances(numbers: Mapping[str, Any], *, first_fault: float | None,
                   consumers_stopped: float | None) -> RunRebalances:
    """Count `check_rebalances`' episodes (its numbers) that are the run's doing (see
    `not_counted_because`). Numbers without episodes (an older check.json) count as
    their total."""
    groups = numbers.get("groups") or {}
    if not groups:
        return RunRebalances(("",) * int(numbers.get("rebalances") or 0), 0, 0)
    counted: list[str] = []
    before = at_close = 0
    for group, g in groups.items():
        for episode in g.get("episodes") or []:
            start = episode.get("start")
            why = not_counted_because(start, first_fault=first_fault,
                                      consumers_stopped=consumers_stopped)
            if why == CLOSING:
                at_close += 1
            elif why == JOINING:
                before += 1
            else:
                counted.append(f"{group} t={start:.1f}s" if start is not None else group)
    return RunRebalances(tuple(counted), before, at_close)
