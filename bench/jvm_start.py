"""CPU of the lab's JVM starts, with and without their class-data archives.

    .venv/bin/python bench/jvm_start.py [--runs 2]

`brownout spark install` makes two archives from PySpark's jars (docs/installation.md):
one for Spark's drivers and executors, one for the ZooKeeper servers of ZooKeeper-mode
labs. This measures what they save, alternating runs without and with them:

- ZooKeeper: an ensemble of three servers started at once, CPU (utime + stime of the
  three JVMs) until every one serves (`srvr`) and 2 s more, and the seconds to serving;
- Spark: a local session (`local[1]`) started and two small queries run, the driver
  JVM's CPU and the seconds it took.

"Without" uses an empty cache (XDG_CACHE_HOME), so the JVMs start as they would before
the install made the archives: the JDK's own base archive stays in use either way.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchkit import cpu_seconds

from brownout.cluster import zookeeper as zk
from brownout.cluster import zookeeper_cds
from brownout.cluster.ports import PortAllocator
from brownout.common.java import require_java
from brownout.common.properties import format_properties

SPARK_PROBE = """\
import sys, time
from brownout.spark.session import make_spark
t = time.monotonic()
spark = make_spark("local[1]", "jvm-start", shuffle_partitions=1)
spark.range(1000).selectExpr("sum(id)").collect()
spark.createDataFrame([(1, "a")], ["x", "y"]).groupBy("y").count().collect()
pid = spark.sparkContext._gateway.proc.pid
ticks = sum(int(x) for x in open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()[11:13])
print(time.monotonic() - t, ticks / __import__("os").sysconf("SC_CLK_TCK"))
spark.stop()
"""


def zookeeper_start(archive: Path | None) -> tuple[float, float]:
    """(seconds until all three serve, CPU seconds of the three JVMs)."""
    java, jars = require_java("ZooKeeper"), zk.jars_dir()
    with tempfile.TemporaryDirectory(prefix="bench-zk-") as tmp:
        with PortAllocator() as allocate:
            specs = zk.with_configs([
                zk.ZooKeeperSpec(i, {n: allocate() for n in zk.PORT_NAMES},
                                 Path(tmp) / f"zookeeper-{i}", "127.0.0.1")
                for i in (1, 2, 3)])
        procs = []
        for spec in specs:
            spec.data_dir.mkdir(parents=True)
            spec.myid_path.write_text(f"{spec.server_id}\n")
            spec.config_path.write_text(format_properties(spec.properties, "bench"))
            spec.log_config_path.write_text(zk.LOG4J2_PROPERTIES)
            with spec.log_path.open("wb") as log:
                procs.append(subprocess.Popen(zk.command(java, jars, spec, archive),
                                              stdout=log, stderr=subprocess.STDOUT,
                                              start_new_session=True))
        started = time.monotonic()
        try:
            while not all(zk.server_status(s.client_address, 1.0).serving for s in specs):
                if time.monotonic() - started > 120:
                    raise RuntimeError("the ensemble did not serve within 120 s")
                time.sleep(0.05)
            serving = time.monotonic() - started
            time.sleep(2.0)
            cpu = sum(cpu_seconds(p.pid) for p in procs)
        finally:
            for p in procs:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    return serving, cpu


def spark_start(cache: str | None) -> tuple[float, float]:
    """(seconds until the session had run its queries, the driver JVM's CPU seconds)."""
    env = dict(os.environ)
    if cache is not None:
        env["XDG_CACHE_HOME"] = cache
    out = subprocess.run([sys.executable, "-c", SPARK_PROBE], capture_output=True, text=True,
                         env=env, timeout=300, check=True).stdout.split()
    return float(out[-2]), float(out[-1])


def summary(label: str, values: list[tuple[float, float]]) -> str:
    seconds = statistics.median(v[0] for v in values)
    cpu = statistics.median(v[1] for v in values)
    return f"{label:34s} {seconds:6.1f} s {cpu:7.1f} CPU s  (median of {len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    archive = zookeeper_cds.existing_archive(zk.jars_dir())
    if archive is None:
        raise SystemExit("no ZooKeeper archive: run `brownout spark install` first")
    rows: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-empty-cache-") as empty:
        for _ in range(args.runs):
            rows.setdefault("zookeeper x3, no archive", []).append(zookeeper_start(None))
            rows.setdefault("zookeeper x3, archive", []).append(zookeeper_start(archive))
            rows.setdefault("spark local session, no archive", []).append(spark_start(empty))
            rows.setdefault("spark local session, archive", []).append(spark_start(None))
    print(f"load average {os.getloadavg()[0]:.1f}")
    for label, values in rows.items():
        print(summary(label, values))


if __name__ == "__main__":
    main()
