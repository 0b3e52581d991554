"""PipelineConfig round trips through pipeline.json, also as older runs wrote it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from brownout.spark.pipeline import PipelineConfig, _short


def test_the_config_round_trips(tmp_path: Path):
    config = PipelineConfig(bootstrap="127.0.0.1:9092", topics={"p": "payments"},
                            out=tmp_path, max_offsets_per_trigger=500)
    assert PipelineConfig.from_json(config.as_json()) == config


def test_a_config_that_names_the_kafka_source_still_loads(tmp_path: Path):
    # pipeline.json of runs made while the source was selectable names it; the audit of
    # such a run reads it again.
    data = PipelineConfig(bootstrap="b:1", topics={"c": "clicks"}, out=tmp_path).as_json()
    for source in ("kafka", "brownout-kafka"):
        config = PipelineConfig.from_json({**data, "source": source})
        assert config.topics == {"c": "clicks"} and config.out == tmp_path


def test_a_failure_is_reported_with_what_was_lost():
    # As Spark 4.2's Kafka source words a checkpoint beyond the log's end.
    error = RuntimeError(
        "[STREAM_FAILED] Query [id = a, runId = b] terminated with exception: Some data may "
        "have been lost because they are not available in Kafka any more;\n"
        "  either the data was aged out by Kafka or the topic may have been deleted\n"
        "  Reason: Partition t-0 offset was changed from 25 to 10.\n"
        "  === Streaming Query ===\n")
    assert _short(error) == (
        "[STREAM_FAILED] Query [id = a, runId = b] terminated with exception: Some data may "
        "have been lost because they are not available in Kafka any more; Reason: "
        "Partition t-0 offset was changed from 25 to 10.")
    assert _short(RuntimeError("[KAFKA_DATA_LOSS.START_OFFSET_RESET] x\nmore")) == (
        "[KAFKA_DATA_LOSS.START_OFFSET_RESET] x")
    assert _short(RuntimeError("first line\nsecond")) == "first line"
    assert _short(RuntimeError("")) == "RuntimeError"


def test_a_stopped_pipeline_audits_when_asked_and_not_for_a_parent_that_is_gone():
    import os
    import threading

    from brownout.spark.pipeline import await_audit

    go, stop = threading.Event(), threading.Event()
    threading.Timer(0.1, go.set).start()
    assert await_audit(go, stop, os.getppid(), poll=0.05)
    # Told to stop instead (a second SIGTERM), or its parent died: nobody asks any more.
    go.clear()
    threading.Timer(0.1, stop.set).start()
    assert not await_audit(go, stop, os.getppid(), poll=0.05)
    stop.clear()
    assert not await_audit(go, stop, os.getppid() + 1, poll=0.05)
