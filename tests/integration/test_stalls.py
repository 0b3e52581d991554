"""A node notices its own event loop standing still, and `brownout status` shows it.

A real node process is stopped with SIGSTOP for 1.5 s and continued: a stopped process
wakes late, exactly as a loop blocked by work or starved of CPU does. The node must write
a `stall` event and a WARN line, and `brownout status` must show the stall.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from _cluster import wait_until
from test_cli import force_stop, run, status

from brownout.cluster.wire import WireClient
from brownout.common.events import read_events

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

PAUSE_S = 1.5
# How far two processes' readings of the one wall clock, taken a moment apart, may
# disagree about the same instant.
SLACK_S = 0.05
INTERVAL_MS = 50  # event.loop.lag.check.interval.ms, the node's default


def test_a_paused_node_reports_the_stall_and_status_shows_it(tmp_path: Path) -> None:
    d = tmp_path / "lab"
    try:
        run("up", "--brokers", "1", "--combined", "--profile", "fast", "--dir", str(d))
        node = status(d)["nodes"][0]
        events_path = d / "node-1" / "events.jsonl"

        # The pause is told apart from whatever else stalled the loop (a busy machine
        # does) by when it happened: the stall that covers it began before the SIGSTOP
        # (or within one check interval after it) and ended after the SIGCONT. Its
        # length is the pause, not some multiple: it began no earlier than a moment the
        # loop is known to have run (it answered a Metadata request just before).
        alive = time.time()
        with WireClient(node["broker_listener"], 10) as client:
            client.topic_metadata([])
        # Both moments are taken inside the pause, so that this process being held back
        # by a busy machine around either signal can only make the pause seem shorter.
        os.kill(node["pid"], signal.SIGSTOP)
        stopped = time.time()
        time.sleep(PAUSE_S)  # the event under test: the process does not run
        continued = time.time()
        os.kill(node["pid"], signal.SIGCONT)

        def covering() -> list[dict]:
            return [
                e for e in read_events(events_path)
                if e["event"] == "stall"
                and e["time"] - e["lag_ms"] / 1000 <= stopped + INTERVAL_MS / 1000 + SLACK_S
                and e["time"] >= continued - SLACK_S
            ]

        [pause] = wait_until(covering, 10, "a stall event covering the pause")
        assert pause["lag_ms"] >= (continued - stopped - SLACK_S) * 1000 - 2 * INTERVAL_MS, pause
        assert pause["time"] - pause["lag_ms"] / 1000 >= alive - SLACK_S, (pause, alive)
        assert pause["threshold_ms"] == 100

        # The node writes the event, then the log line: the line may come a moment later.
        line = wait_until(lambda: [
            line for line in (d / "node-1" / "node.log").read_text().splitlines()
            if "[EventLoopMonitor nodeId=1] The event loop stalled" in line], 10,
            "the stall's line in node.log")[0]
        assert " WARNING " in line, line

        # `status` shows the worst recent stall: the pause, or one even longer.
        stalls = [e for e in read_events(events_path) if e["event"] == "stall"]
        worst = max(s["lag_ms"] for s in stalls)
        after = status(d)["nodes"][0]
        assert after["state"] == "running"
        assert after["worst_stall"]["lag_ms"] == worst >= pause["lag_ms"]
        assert after["worst_stall"]["ago_s"] < 600  # the window "recent" reaches back

        table = run("status", "--dir", str(d)).stdout
        assert "worst stall" in table
        assert f"{worst:.0f} ms" in table, table
    finally:
        force_stop(d)


def test_status_json_keeps_the_stall_field_for_every_node(tmp_path: Path) -> None:
    d = tmp_path / "lab"
    try:
        run("up", "--brokers", "1", "--combined", "--profile", "fast", "--dir", str(d),
            "--no-start")
        data = json.loads(run("status", "--json", "--dir", str(d)).stdout)
        assert [n["worst_stall"] for n in data["nodes"]] == [None]
    finally:
        force_stop(d)
