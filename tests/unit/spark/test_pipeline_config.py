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


def test_a_failure_is_reported_by_its_data_loss_line():
    error = RuntimeError("org.apache.spark.sql.streaming.StreamingQueryException: ...\n"
                         "[KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED] Some data may have "
                         "been lost ...\n\tat org.apache.spark...")
    assert _short(error).startswith("[KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED]")
    assert _short(RuntimeError("first line\nsecond")) == "first line"
