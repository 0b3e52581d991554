"""CPU an idle cluster burns while holding 1 000 partitions.

    .venv/bin/python bench/idle.py [--window 20]

1 000 partitions as 250 topics of 4 partitions, RF 3 (min.insync.replicas 2): the shape
librdkafka's mock cluster auto-creates, so it can hold the same. After every partition
has a leader and a settling pause, utime + stime of each node process (from
/proc/PID/stat) over the window, as a percentage of one core. The mock's figure is this
whole process (the mock's broker threads and the idle client that owns it).
"""

from __future__ import annotations

import argparse
import gc
import os
import time

from benchkit import (
    MOCK_PARTITIONS,
    Target,
    brownout_cluster,
    cpu_seconds,
    create_topics,
    mock_cluster,
)

TOPICS = 250


def idle_cpu(target: Target, window: float, settle: float = 5.0) -> dict[str, float]:
    """Returns {"total": % of one core, "node <id>": % ...} over `window` seconds."""
    names = [f"idle-{i:03d}" for i in range(TOPICS)]
    create_topics(target, names, MOCK_PARTITIONS, 3, timeout=180)
    gc.collect()  # the clients used to create the topics are gone before the window
    time.sleep(settle)
    pids = {f"node {n}": pid for n, (pid, _, _) in target.nodes.items()}
    if target.is_mock:
        pids = {"process": os.getpid()}
    before = {k: cpu_seconds(p) for k, p in pids.items()}
    started = time.monotonic()
    time.sleep(window)
    elapsed = time.monotonic() - started
    result = {k: 100 * (cpu_seconds(p) - before[k]) / elapsed for k, p in pids.items()}
    result["total"] = sum(result.values())
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--window", type=float, default=20.0)
    args = parser.parse_args()
    for cluster in (brownout_cluster, mock_cluster):
        with cluster() as target:
            started = time.monotonic()
            r = idle_cpu(target, args.window)
            print(
                f"{target.name:8s} idle with {TOPICS * MOCK_PARTITIONS} partitions: "
                + ", ".join(f"{k} {v:.1f}%" for k, v in r.items())
                + f" ({time.monotonic() - started:.0f} s with creation)"
            )


if __name__ == "__main__":
    main()
