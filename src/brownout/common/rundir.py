"""The names of the files in a run directory, in one place.

A run directory is written by several layers (workload/ records the history and the
final read, check/ and scenarios/ the verdicts, spark/ the pipeline's files, report/ the
page) and read by others (report/, the repetition summary, tests). Each name is defined
here once, so a writer and its readers cannot drift apart.

    run.json                 the workload run's parameters and start time
    history.jsonl            the history while it is recorded (one event a line)
    history.parquet          the history once the run is over
    final-read.parquet       every record of the run's topics, read to the end
    high-watermarks.json     the high watermark per partition at the final read
    check.json               check_all over the whole run
    check-workloads.json     check_all over each workload alone
    scenario.json            the scenario as it ran (defaults filled in)
    verdict.json             the expectations' outcomes and the verdict
    lost-writes.parquet      the acknowledged writes missing from the log, with reasons
    duplicates.json          every record in the log more than once: its copies' batch
                             headers (read from the lab's log directories) and the cause
    faults.jsonl             FaultResult values collected by hand (`brownout fault
                             ... --json`) while a run recorded; never by a scenario
    report.html              the report
    stuck-threads.txt        every thread's stack, only when a run outlived its budget
    running.json             while a run runs: its process and what it started besides
                             its cluster (scenarios/leftovers.py); left behind only by
                             a run whose process was killed (`brownout clean`)
    cluster/                 the run's cluster (removed nodes' files kept in nodes/)
    cluster.json             the cluster's state, copied after the teardown
    nodes/node-N/            node.log, server.properties, events.jsonl of each node
                             (as in the cluster directory's node-N/; Apache Kafka's
                             nodes: gc.log and the gc.log.N it rotated at restarts)
    pipeline/                the Spark pipeline: pipeline.json, pipeline.log,
                             progress.jsonl, audit.log, outputs and checkpoints
    pipeline-check.json      the pipeline audit

Beside runs, `--repeat` writes summary.json over its run directories, a sweep
sweep.json and sweep.html over its cells, and a comparison of engines compare.json and
compare.html over its engines' runs.
"""

from __future__ import annotations

from pathlib import Path

RUN_FILE = "run.json"
HISTORY_JSONL = "history.jsonl"
HISTORY_FILE = "history.parquet"
FINAL_READ_FILE = "final-read.parquet"
WATERMARKS_FILE = "high-watermarks.json"
CHECK_FILE = "check.json"
WORKLOAD_CHECKS_FILE = "check-workloads.json"
SCENARIO_FILE = "scenario.json"
VERDICT_FILE = "verdict.json"
LOST_WRITES_FILE = "lost-writes.parquet"
DUPLICATES_FILE = "duplicates.json"
FAULTS_FILE = "faults.jsonl"
REPORT_FILE = "report.html"
STUCK_FILE = "stuck-threads.txt"
RUNNING_FILE = "running.json"
# A run on a cluster the lab did not start: what it talked to (no cluster.json, no nodes/)
EXTERNAL_FILE = "external.json"
CLUSTER_DIR = "cluster"
CLUSTER_STATE_FILE = "cluster.json"
NODES_DIR = "nodes"
NODE_LOG = "node.log"
NODE_CONFIG = "server.properties"
NODE_EVENTS = "events.jsonl"
NODE_GC_LOG = "gc.log"  # Apache Kafka's nodes (cluster/launcher.py)
NODE_FILES = (NODE_LOG, NODE_CONFIG, NODE_EVENTS, NODE_GC_LOG)
PIPELINE_DIR = "pipeline"
PIPELINE_FILE = "pipeline.json"
PIPELINE_LOG = "pipeline.log"
PIPELINE_PROGRESS_FILE = "progress.jsonl"
PIPELINE_AUDIT_LOG = "audit.log"
PIPELINE_CHECK_FILE = "pipeline-check.json"
SUMMARY_FILE = "summary.json"
SWEEP_FILE = "sweep.json"
SWEEP_PAGE = "sweep.html"
COMPARE_FILE = "compare.json"
COMPARE_PAGE = "compare.html"

_NODE_DIR_PREFIX = "node-"


def node_dir_name(node_id: int) -> str:
    """A node's directory, in a cluster directory and under a run's nodes/."""
    return f"{_NODE_DIR_PREFIX}{node_id}"


def node_dirs(parent: Path) -> dict[int, Path]:
    """The node-N directories right under `parent`, by node id, in id order."""
    found = {}
    for path in parent.glob(f"{_NODE_DIR_PREFIX}*"):
        suffix = path.name.removeprefix(_NODE_DIR_PREFIX)
        if suffix.isdigit() and path.is_dir():
            found[int(suffix)] = path
    return dict(sorted(found.items()))
