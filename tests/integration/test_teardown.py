"""A run's teardown stops its nodes even when their files cannot be kept.

On a full disk a broker halts (its log dir fails) but a controller, which writes
little, lives on; the teardown then fails to copy the nodes' files into the run
directory. It must still stop every node: a run once left its controller running when
the copy raised. A regular file where the run's nodes/ directory goes fails the copy the
same way, without filling the disk.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from _cluster import wait_until
from rich.console import Console

from brownout.cluster import lab
from brownout.cluster.supervisor import is_node_process
from brownout.common.rundir import NODES_DIR
from brownout.scenarios import schema
from brownout.scenarios.cluster_stage import ClusterStage
from brownout.scenarios.progress import LineProgress

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

STOP_TIMEOUT = 60.0

SCENARIO = """name: teardown-probe
description: Two brokers and a dedicated controller, nothing else.
cluster:
  brokers: 2
  controllers: 1
  profile: fast
duration: 1s
"""


def test_nodes_stop_when_their_files_cannot_be_kept(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    notes: list[str] = []
    stage = ClusterStage(schema.loads(SCENARIO), run_dir,
                         LineProgress(Console(file=io.StringIO(), width=200)), notes)
    try:
        nodes = stage.up().state.nodes
        assert len(nodes) == 3
        assert all(is_node_process(n.pid, str(n.config_path)) for n in nodes.values())
        (run_dir / NODES_DIR).write_text("not a directory\n")
        stage.down()
        wait_until(lambda: not any(is_node_process(n.pid, str(n.config_path))
                                   for n in nodes.values()),
                   STOP_TIMEOUT, "every node of the run stopped")
    finally:
        lab.down(stage.directory, timeout=0.0)
    assert sum("teardown: not kept:" in note for note in notes) == 3, notes
    assert (run_dir / "cluster.json").is_file()  # what could be kept was
