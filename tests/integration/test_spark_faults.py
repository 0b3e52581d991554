"""Spark's Kafka source under a fault, end to end: the built-in spark-data-loss on
Brownout's node, through `brownout run`. An unclean election leaves orders-0's log
ending below the offset the pipeline's queries had read to; with failOnDataLoss=true
(Spark's default) a query fails with Spark's data-loss error, the lab restarts it from
its checkpoint, and the verdict says the data loss was reported.

(spark-data-loss-ignored, failOnDataLoss=false, is measured in docs/scenarios.md: the
suite runs the pipeline through a fault twice already, here and in test_scenarios.py.)
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from conftest import assert_run_held
from test_scenarios import no_node_left, run

pytestmark = [
    pytest.mark.integration, pytest.mark.timeout(900), pytest.mark.long(150),
    pytest.mark.skipif(importlib.util.find_spec("pyspark") is None, reason="needs pyspark"),
]


def test_spark_data_loss_fails_the_query_with_sparks_error(tmp_path: Path) -> None:
    from brownout.check.spark_loss import is_data_loss, reasons

    run_dir = tmp_path / "run"
    result = run("spark-data-loss", "--out", str(run_dir), "--seed", "1", timeout=840)
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert_run_held(result.returncode, verdict, result.stdout[-3000:] + result.stderr[-2000:])
    pipeline = verdict["pipeline"]
    assert pipeline["fail_on_data_loss"] is True
    [loss] = [e for e in verdict["expectations"] if e["name"] == "pipeline_data_loss"]
    assert loss["observed"] == "reported", loss
    # Every failure, while the workload ran or as the pipeline drained, is Spark's
    # data-loss error about orders-0.
    failures = pipeline["failures"]
    ends = [pipeline["error"]] if pipeline.get("error") else []
    texts = [f["error"] for f in failures] + ends
    assert texts, pipeline
    for text in texts:
        assert is_data_loss(text), text
        assert reasons(text) and all("orders-0" in r for r in reasons(text)), text
    assert all(f["data_loss"] for f in failures)
    # A failure while the workload ran was restarted from the checkpoint. The writes end
    # before the leader's kill, so the new leader's log never grows back past the failed
    # batch: the restarted query fails again, and the pipeline ends failed.
    assert pipeline["restarts"] >= (1 if failures else 0), pipeline
    assert pipeline["status"] == "failed", pipeline
    # Audited in the pipeline's process, whose queries had failed (not in a JVM of its own).
    assert pipeline["audit_process"] == "pipeline", pipeline
    audit = json.loads((run_dir / "pipeline-check.json").read_text())
    orders = audit["topics"]["orders"]
    # The new leader's records below the offsets the pipeline had read (a busy machine's
    # late sends, taken after the election; none on a quiet one): never read, and counted.
    assert isinstance(orders["skipped_by_pipeline"], int), orders
    [skipped] = [e for e in verdict["expectations"] if e["name"] == "pipeline_skipped_records"]
    assert skipped["observed"] == orders["skipped_by_pipeline"]
    no_node_left(run_dir)
