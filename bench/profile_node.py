"""Where a broker's time goes under the acks=all RF 3 1 KiB produce load, or under one
consumer fetching that topic from its start.

    .venv/bin/python bench/profile_node.py [--seconds 20] [--node 1] [--top 25]
                                           [--workload produce|fetch] [--size 1024]
                                           [--acks all] [--replication-factor 3]

Builds a 3+1 cluster, produces records of `--size` bytes (default 1 KiB, acks=all,
idempotent, linger 5) into a 4-partition topic (RF 3 by default) for `--seconds`, and
meanwhile samples one broker with py-spy
(`pip install py-spy`; needs ptrace rights, e.g. root). With `--workload fetch` the
produce runs first for twice as long, unsampled, and the broker is sampled while one
consumer (bench/throughput.py's fetch row) reads the topic from its start for
`--seconds`. Prints the functions with the most samples on the CPU, by own time and by
inclusive time, and the rate reached while sampled. The collapsed stacks are kept in
--out for flame graphs.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import throughput
from benchkit import MOCK_PARTITIONS, brownout_cluster


def summarize(collapsed: Path, top: int) -> str:
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        total += count
        frames = [f.split(" (")[0] + " (" + f.split(" (")[-1] for f in stack.split(";")]
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    lines = [f"{total} samples on the CPU (idle excluded)", "", "own time:"]
    lines += [f"  {100 * n / total:5.1f}%  {f}" for f, n in own.most_common(top)]
    lines += ["", "inclusive time:"]
    lines += [f"  {100 * n / total:5.1f}%  {f}" for f, n in inclusive.most_common(top)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--node", type=int, default=1)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", type=Path, default=Path("runs/profile-node.txt"))
    parser.add_argument("--workload", choices=("produce", "fetch"), default="produce")
    parser.add_argument("--size", type=int, default=1024, help="record value bytes")
    parser.add_argument("--acks", choices=("0", "1", "all"), default="all")
    parser.add_argument("--replication-factor", type=int, default=3)
    args = parser.parse_args()
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with brownout_cluster() as target:
        target.create_topic("profile", MOCK_PARTITIONS, args.replication_factor)
        pid = target.nodes[args.node][0]
        result: dict[str, float] = {}

        if args.workload == "fetch":
            throughput.produce_for(target, "profile", args.size, args.acks,
                                   2 * args.seconds)

        def load() -> None:
            if args.workload == "fetch":
                result.update(throughput.fetch_for(target, "profile", args.seconds))
            else:
                result.update(throughput.produce_for(target, "profile", args.size,
                                                     args.acks, args.seconds))

        producer = threading.Thread(target=load)
        producer.start()
        try:
            subprocess.run(
                [
                    py_spy,
                    "record",
                    "--pid",
                    str(pid),
                    "--duration",
                    str(int(args.seconds) - 2),
                    "--rate",
                    "200",
                    "--format",
                    "raw",
                    "--output",
                    str(args.out),
                    "--nonblocking",
                ],
                check=True,
                capture_output=True,
            )
        finally:
            producer.join()
    what = "one consumer fetching" if args.workload == "fetch" else (
        f"acks={args.acks} RF {args.replication_factor} {args.size} B")
    print(f"node {args.node} (pid {pid}), {what} at {result['mb_s']:.1f} MB/s")
    print(summarize(args.out, args.top))


if __name__ == "__main__":
    main()
