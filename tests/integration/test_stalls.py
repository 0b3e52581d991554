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
from test_cli import force_stop, run, status

from brownout.common.events import read_events

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

PAUSE_S = 1.5


def test_a_paused_node_reports_the_stall_and_status_shows_it(tmp_path: Path) -> None:
    d = tmp_path / "lab"
    try:
        run("up", "--brokers", "1", "--combined", "--profile", "fast", "--dir", str(d))
        node = status(d)["nodes"][0]
        before = node["worst_stall"]
        # whatever the start cost, it was far shorter than the pause to come
        assert before is None or before["lag_ms"] < PAUSE_S * 1000 * 0.8, before

        os.kill(node["pid"], signal.SIGSTOP)
        time.sleep(PAUSE_S)
        os.kill(node["pid"], signal.SIGCONT)

        events_path = d / "node-1" / "events.jsonl"
        deadline = time.monotonic() + 10
        stalls: list[dict] = []
        while time.monotonic() < deadline and not any(
                s["lag_ms"] >= PAUSE_S * 1000 * 0.8 for s in stalls):
            time.sleep(0.2)
            stalls = [e for e in read_events(events_path) if e["event"] == "stall"]
        long_ones = [s for s in stalls if s["lag_ms"] >= PAUSE_S * 1000 * 0.8]
        assert long_ones, stalls
        # the measured lag is the pause, not some multiple of it
        assert long_ones[-1]["lag_ms"] < PAUSE_S * 1000 + 2000, long_ones
        assert long_ones[-1]["threshold_ms"] == 100

        log = (d / "node-1" / "node.log").read_text()
        assert "WARN" in log and "[EventLoopMonitor nodeId=1] The event loop stalled" in log

        after = status(d)["nodes"][0]
        assert after["state"] == "running"
        assert after["worst_stall"]["lag_ms"] == long_ones[-1]["lag_ms"]
        assert after["worst_stall"]["ago_s"] < 30

        table = run("status", "--dir", str(d)).stdout
        assert "worst stall" in table
        assert f"{long_ones[-1]['lag_ms']:.0f} ms" in table, table
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
