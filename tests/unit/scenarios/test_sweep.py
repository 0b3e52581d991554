"""Sweeps: the matrix, its cells, parameters set into a scenario file, the checks at
load time, and the summary of a sweep directory built by hand."""

import json
import re

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from brownout.cli import app
from brownout.report.sweep_page import build_sweep_html
from brownout.scenarios import ScenarioError, loads
from brownout.scenarios.repeat import plan
from brownout.scenarios.schema import sweep_cells
from brownout.scenarios.sweep import (
    Matrix,
    SweepError,
    apply,
    cells,
    parse_matrix,
    parse_set_option,
)
from brownout.scenarios.sweep_run import CELLS_FILE, print_sweep_table, summarise_sweep

BASE = """
name: base
cluster: {brokers: 3, controllers: 1, profile: fast, broker_set: {num.io.threads: 8}}
topics:
  - {name: events, partitions: 4, replication_factor: 2}
workloads:
  - {label: acks-all, topic: events, acks: all, rate: 100}
  - {label: acks-1, topic: events, acks: 1, rate: 100}
consumers:
  - {group: readers, topic: events, session_timeout_ms: 10000}
  - {group: audit, topic: events}
schedule:
  - {at: 5s, id: rolling, rolling-restart: all-brokers, down: 12s}
duration: 20s
"""


def doc():
    return yaml.safe_load(BASE)


def test_parameters_are_paths_into_the_file():
    out = apply(doc(), [
        ("cluster.brokers", 2),
        ("consumers.*.session_timeout_ms", 30000),
        ("workloads.acks-1.rate", 50),
        ("schedule.rolling.down", "3s"),
        ("consumers.1.metadata_max_age_ms", 1000),
        # below a config mapping the rest is one key, dots and all; values are strings
        ("cluster.broker_set.leader.imbalance.check.interval.seconds", 30),
        ("consumers.readers.config.metadata.max.age.ms", 5000),
        ("cluster.set.auto.create.topics.enable", False),
    ])
    assert out["cluster"]["brokers"] == 2
    assert [c["session_timeout_ms"] for c in out["consumers"]] == [30000, 30000]
    assert [w["rate"] for w in out["workloads"]] == [100, 50]
    assert out["schedule"][0]["down"] == "3s"
    assert out["consumers"][1]["metadata_max_age_ms"] == 1000
    assert out["cluster"]["broker_set"] == {
        "num.io.threads": 8, "leader.imbalance.check.interval.seconds": "30"}
    assert out["consumers"][0]["config"] == {"metadata.max.age.ms": "5000"}
    assert out["cluster"]["set"] == {"auto.create.topics.enable": "false"}
    assert doc()["cluster"]["brokers"] == 3  # the document itself is untouched


@pytest.mark.parametrize(("name", "problem"), [
    ("workloads.acks-0.rate", "no item labelled, named or with id 'acks-0'"),
    ("consumers.7.members", "no item 7"),
    ("consumers.*", "names list items"),
    ("name.length", "inside a single value"),
])
def test_a_parameter_that_names_nothing_is_refused(name, problem):
    with pytest.raises(SweepError, match=re.escape(problem)):
        apply(doc(), [(name, 1)])


def test_cells_are_the_product_without_the_excluded_ones():
    matrix = parse_matrix({
        "parameters": {"cluster.brokers": [2, 3], "consumers.*.session_timeout_ms":
                       [10000, 30000], "cluster.zookeeper": [False, True]},
        "exclude": [{"cluster.brokers": 2, "cluster.zookeeper": True}],
        "repeat": 4})
    got = cells(matrix)
    assert [c.index for c in got] == list(range(1, 7))
    assert [dict(c.values)["cluster.brokers"] for c in got] == [2, 2, 3, 3, 3, 3]
    assert not any(dict(c.values) == {"cluster.brokers": 2, "cluster.zookeeper": True}
                   for c in got)
    assert got[0].directory == "cell-01"
    assert got[0].label() == "brokers=2 session_timeout_ms=10000 zookeeper=false"
    assert matrix.repeat == 4
    # An excluded value must match by type too: True is not 1.
    one = parse_matrix({"parameters": {"a.b": [1, True]}, "exclude": [{"a.b": True}]})
    assert [dict(c.values)["a.b"] for c in cells(one)] == [1]


@pytest.mark.parametrize(("block", "field"), [
    ({}, "matrix.parameters"),
    ({"parameters": {"cluster.brokers": []}}, "matrix.parameters.cluster.brokers"),
    ({"parameters": {"cluster.brokers": [2, 2]}}, "matrix.parameters.cluster.brokers"),
    ({"parameters": {"cluster.brokers": [[2]]}}, "matrix.parameters.cluster.brokers"),
    ({"parameters": {"cluster..brokers": [2]}}, "matrix.parameters.cluster..brokers"),
    ({"parameters": {"a.b": [1]}, "exclude": [{"c.d": 1}]}, "matrix.exclude[0]"),
    ({"parameters": {"a.b": [1]}, "repeat": 0}, "matrix.repeat"),
    ({"parameters": {"a.b": [1]}, "repeats": 2}, "matrix.repeats"),
])
def test_bad_matrices_say_where(block, field):
    with pytest.raises(SweepError) as e:
        parse_matrix(block)
    assert e.value.field == field


def test_everything_excluded_is_an_error():
    with pytest.raises(SweepError, match="every combination is excluded"):
        cells(parse_matrix({"parameters": {"a.b": [1]}, "exclude": [{"a.b": 1}]}))


def test_set_options_read_values_as_yaml_scalars():
    assert parse_set_option("cluster.brokers=2,3") == ("cluster.brokers", (2, 3))
    assert parse_set_option("cluster.zookeeper=false,true") == (
        "cluster.zookeeper", (False, True))
    assert parse_set_option("consumers.*.client=confluent,kafka-python") == (
        "consumers.*.client", ("confluent", "kafka-python"))
    for bad in ("cluster.brokers", "=1", "cluster.brokers=", "a=1,1"):
        with pytest.raises(SweepError):
            parse_set_option(bad)
    merged = Matrix((("a.b", (1,)), ("c.d", (2,)))).with_parameters([("a.b", (5, 6))])
    assert merged.parameters == (("a.b", (5, 6)), ("c.d", (2,)))


def test_the_engine_parameter_says_what_runs_the_nodes_and_keeps_the_seed():
    from brownout.scenarios.sweep_run import cell_seed

    matrix = parse_matrix({
        "parameters": {"engine": ["node", "kafka", "kafka:3.9"],
                       "cluster.zookeeper": [False, True]},
        "exclude": [{"engine": "kafka", "cluster.zookeeper": True},
                    {"engine": "kafka:3.9", "cluster.zookeeper": False}]})
    got = cells(matrix)
    assert [c.label() for c in got] == [
        "engine=node zookeeper=false", "engine=node zookeeper=true",
        "engine=kafka zookeeper=false", "engine=kafka:3.9 zookeeper=true"]
    assert [c.engine for c in got] == ["node", "node", "kafka", "kafka:3.9"]
    # Cells that differ only in the engine share a variant, and so a seed.
    assert [c.variant for c in got] == [1, 2, 1, 2]
    assert cell_seed(7, got[0]) == cell_seed(7, got[2]) != cell_seed(7, got[1])
    assert cell_seed(7, got[1]) == cell_seed(7, got[3])
    # The engine is not a path in the file.
    assert apply(doc(), got[2].values)["cluster"] == {**doc()["cluster"], "zookeeper": False}
    assert "engine" not in apply(doc(), got[2].values)
    # Without an engine parameter the seeds are the cell's own, as before.
    plain = cells(parse_matrix({"parameters": {"cluster.brokers": [2, 3]}}))
    assert [c.engine for c in plain] == [None, None]
    assert cell_seed(7, plain[0]) != cell_seed(7, plain[1])
    for bad in ({"engine": [3]}, {"engine": ["Kafka 4"]}):
        with pytest.raises(SweepError, match="is not an engine") as e:
            parse_matrix({"parameters": bad})
        assert e.value.field == "matrix.parameters.engine"
    assert parse_set_option("engine=node,kafka:3.9") == ("engine", ("node", "kafka:3.9"))
    with pytest.raises(SweepError, match="is not an engine"):
        parse_set_option("engine=node,true")


def test_a_cells_engine_is_resolved_once_and_not_twice(tmp_path, monkeypatch):
    from brownout.scenarios.sweep_run import on_engines

    monkeypatch.setenv("BROWNOUT_KAFKA_CACHE", str(tmp_path / "empty-cache"))
    text = BASE + "matrix:\n  parameters:\n    engine: [node, kafka:3.9.2]\n"
    scenario = loads(text, "base.yaml")
    pairs = sweep_cells(yaml.safe_load(text), scenario.matrix, "base.yaml")
    [(_, node_run)] = on_engines(pairs[:1], None)
    assert node_run.cluster.distribution is None
    with pytest.raises(SweepError, match=r"Apache Kafka 3\.9\.2 is not installed") as e:
        on_engines(pairs, None)
    assert e.value.field == "engine"
    with pytest.raises(SweepError, match="both say what runs the nodes"):
        on_engines(pairs, "/opt/kafka")
    assert [c.label() for c, _ in on_engines(
        sweep_cells(doc(), Matrix((("cluster.brokers", (2,)),)), "base.yaml"), None)] == [
        "brokers=2"]


def test_a_matrix_in_the_file_is_checked_cell_by_cell_at_load():
    text = BASE + "matrix:\n  parameters:\n    cluster.brokers: [2, 3]\n"
    scenario = loads(text, "base.yaml")
    assert scenario.matrix == Matrix((("cluster.brokers", (2, 3)),))
    pairs = sweep_cells(yaml.safe_load(text), scenario.matrix, "base.yaml")
    assert [s.cluster.brokers for _, s in pairs] == [2, 3]
    assert all(s.matrix is None for _, s in pairs)
    # A cell that is not a valid scenario names the cell and the problem, at the
    # matrix's line.
    bad = BASE + "matrix:\n  parameters:\n    cluster.brokers: [1, 3]\n"
    with pytest.raises(ScenarioError) as e:
        loads(bad, "base.yaml")
    assert bad.splitlines()[e.value.line - 1].strip() == "parameters:"
    assert "cell-01 (cluster.brokers=1) is not a valid scenario" in str(e.value)
    assert "replication_factor 2 needs at least that many brokers" in str(e.value)


# -- the summary of a sweep directory ---------------------------------------------------


def _run(directory, word, lost, rebalances, longest):
    directory.mkdir(parents=True)
    (directory / "verdict.json").write_text(json.dumps({
        "verdict": word, "error": None, "unknown_reason": None, "elapsed_seconds": 30.0,
        "expectations": [{"name": "acked_writes_lost[acks-all]", "observed": lost,
                          "passed": lost == 0}]}))
    (directory / "check.json").write_text(json.dumps({"results": {
        "writes": {"numbers": {"lost": lost, "acknowledged": 100, "by_acks": {}}},
        "availability": {"numbers": {"longest_unavailable_acks_all": {"seconds": longest}}},
        "rebalances": {"numbers": {"rebalances": rebalances}}}}))


@pytest.fixture
def sweep_dir(tmp_path):
    cells_json = {
        "scenario": "base", "seed": 0, "repeat": 2,
        "parameters": [{"name": "cluster.brokers", "values": [2, 3]}], "exclude": [],
        "cells": [{"cell": "cell-01", "values": {"cluster.brokers": 2}, "label": "brokers=2",
                   "seed": 101},
                  {"cell": "cell-02", "values": {"cluster.brokers": 3}, "label": "brokers=3",
                   "seed": 202}]}
    (tmp_path / CELLS_FILE).write_text(json.dumps(cells_json))
    (run1, _), (run2, _) = plan(2, 101)
    _run(tmp_path / "cell-01" / run1, "pass", 0, 1, 4.0)
    _run(tmp_path / "cell-01" / run2, "fail", 3, 2, 6.0)
    (run1, _), (run2, _) = plan(2, 202)
    _run(tmp_path / "cell-02" / run1, "pass", 0, 0, 1.0)
    _run(tmp_path / "cell-02" / run2, "pass", 0, 0, 3.0)
    return tmp_path


def test_the_summary_has_each_cells_rates_and_measures(sweep_dir):
    sweep = summarise_sweep(sweep_dir)  # its runs' documents have no schema_version
    assert json.loads((sweep_dir / "sweep.json").read_text()) == sweep
    assert next(iter(sweep)) == "schema_version" and sweep["schema_version"] == 1
    assert sweep["verdicts"] == {"pass": 3, "fail": 1, "unknown": 0}
    assert sweep["exit_code"] == 1
    first, second = sweep["cells"]
    rebalanced = {r["measure"]: r for r in first["rates"] if "measure" in r}["rebalances"]
    assert (rebalanced["count"], rebalanced["runs"]) == (2, 2)
    assert rebalanced["interval95"][0] > 0.3 and rebalanced["interval95"][1] == 1.0
    lost = {r["measure"]: r for r in second["rates"] if "measure" in r}["acked_writes_lost"]
    assert (lost["count"], lost["rate"], lost["interval95"][0]) == (0, 0.0, 0.0)
    unavailable = {m["name"]: m for m in first["measures"]}["longest_unavailable_seconds"]
    assert (unavailable["mean"], unavailable["min"], unavailable["max"]) == (5.0, 4.0, 6.0)
    assert [r["report"] for r in first["runs"]] == [
        "cell-01/run-001/report.html", "cell-01/run-002/report.html"]

    console = Console(record=True, width=160)
    print_sweep_table(sweep, console)
    text = console.export_text()
    assert "brokers=2" in text and "2/2 [" in text and "1 failed" in text

    page = build_sweep_html(sweep)
    assert 'href="cell-02/run-002/report.html"' in page
    assert page.count('class="js-plotly-plot"') == 0  # drawn by the browser
    assert 'data-charts="' in page and "runs with a rebalance (95% Wilson interval)" in page


def test_sweep_dry_run_lists_the_cells(tmp_path):
    path = tmp_path / "base.yaml"
    path.write_text(BASE)
    result = CliRunner().invoke(app, ["sweep", str(path), "--set", "cluster.brokers=2,3",
                                      "--set", "workloads.acks-all.rate=50,100", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "4 cell(s) x 1 run(s)" in result.output
    assert "cell-04: brokers=3 rate=100" in result.output
    nothing = CliRunner().invoke(app, ["sweep", str(path), "--dry-run"])
    assert nothing.exit_code == 2 and "has no matrix" in nothing.output
    bad = CliRunner().invoke(app, ["sweep", str(path), "--set", "cluster.brokers=1"])
    assert bad.exit_code == 2 and "is not a valid scenario" in bad.output


def test_resume_needs_the_sweep_directory_and_the_same_sweep(tmp_path):
    from brownout.scenarios.sweep_run import SweepMismatch, check_resumable

    path = tmp_path / "base.yaml"
    path.write_text(BASE)
    args = ["sweep", str(path), "--set", "cluster.brokers=2,3", "--resume"]
    no_out = CliRunner().invoke(app, args)
    assert no_out.exit_code == 2 and "--resume needs --out" in no_out.output
    empty = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "nothing")])
    assert empty.exit_code == 2 and "holds no sweep to resume" in empty.output
    assert not (tmp_path / "nothing").exists()

    cells = {"scenario": "s", "seed": 0, "repeat": 2, "parameters": [], "exclude": [],
             "cells": [{"cell": "cell-01"}]}
    (tmp_path / CELLS_FILE).write_text(json.dumps(cells))
    check_resumable(tmp_path, cells)  # the same sweep: nothing to say
    with pytest.raises(SweepMismatch, match="its repeat is 2, this one's is 3"):
        check_resumable(tmp_path, {**cells, "repeat": 3})


def test_a_run_is_judged_once_it_has_a_verdict_not_interrupted(tmp_path):
    from brownout.scenarios.repeat import judged, set_aside

    run = tmp_path / "run-001"
    assert not judged(run) and set_aside(run) is None
    run.mkdir()
    assert not judged(run)  # started, never judged
    (run / "verdict.json").write_text(json.dumps({"verdict": "fail", "interrupted": None}))
    assert judged(run)  # a failed run is judged: it is not run again
    (run / "verdict.json").write_text(json.dumps({"verdict": "unknown",
                                                  "interrupted": "SIGTERM"}))
    assert not judged(run)
    assert set_aside(run) == tmp_path / "run-001.interrupted"
    run.mkdir()
    assert set_aside(run) == tmp_path / "run-001.interrupted-2"
    assert not run.exists()
