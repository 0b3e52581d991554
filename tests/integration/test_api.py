"""The Python API and the pytest plugin as a user's code would use them: every example
of docs/python-api.md, run as written (but for the scenario its run example names,
swapped for one of a few seconds), and what the page promises of them checked from
outside: results, clusters shared by scope, every node stopped afterwards."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from _time_scale import scaled
from confluent_kafka import Producer
from conftest import assert_run_held

import brownout
import brownout.api as bo
from brownout.cluster import netns
from brownout.cluster.distribution import CACHE_ENV, cache_root

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
pytest_plugins = ["pytester"]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"
# Where `make test` installed Apache Kafka, read before pytester moves HOME.
KAFKA_CACHE = cache_root()
FILE_HEADER = re.compile(r"^# (\w+\.py)\n", re.MULTILINE)  # "# conftest.py" atop a file


def python_blocks() -> list[str]:
    """The page's ```python blocks, in order."""
    blocks = re.findall(r"^```python\n(.*?)^```$", PAGE.read_text(), re.DOTALL | re.MULTILINE)
    assert len(blocks) == 5, "docs/python-api.md's examples changed: update this test"
    return blocks


def files_of(block: str) -> dict[str, str]:
    """A block that shows several files, each under a "# NAME.py" line, by name."""
    parts = FILE_HEADER.split(block)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def left_running(under: Path) -> list[int]:
    """Processes whose command line names a path under `under`: nodes never stopped."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if str(under).encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:  # gone meanwhile
            pass
    return found


def test_a_cluster_in_a_with_block() -> None:
    namespace: dict[str, Any] = {}
    printed = io.StringIO()
    with redirect_stdout(printed):
        exec(python_blocks()[0], namespace)
    cluster, result = namespace["cluster"], namespace["result"]
    assert result.outcome == "ok" and len(result.nodes) == 1, result
    assert cluster.bootstrap_servers in printed.getvalue()
    # without a directory the cluster lived in a temporary one, gone with its nodes
    assert not cluster.directory.exists()
    assert not left_running(cluster.directory)


TINY = """
name: tiny
cluster: {brokers: 1, controllers: 1, profile: fast}
topics: [{name: t, partitions: 1, replication_factor: 1}]
workloads: [{label: acks-all, workload: payments, topic: t, acks: all, rate: 50}]
duration: 3s
expectations: {workloads: {acks-all: {acked_writes_lost: 0}}}
"""


def test_a_run_read_back_from_python(tmp_path: Path) -> None:
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    block = python_blocks()[1]
    assert block.count('"minority-outage"') == 1
    namespace: dict[str, Any] = {"bo": brownout}
    exec(block.replace('"minority-outage"', repr(str(scenario))), namespace)
    run = namespace["run"]
    # pass, or unknown (a node's loop stood still on a busy machine) with every
    # expectation met; `passed` is true for a pass only
    assert_run_held(run.exit_code, run.verdict)
    assert run.passed == (run.outcome == "pass") and run.outcome == run.verdict["verdict"]
    assert run.verdict["expectations"][0]["name"] == "acked_writes_lost[acks-all]"
    history = run.history()
    sends = [t for f, t in zip(history.column("f").to_pylist(),
                               history.column("type").to_pylist(), strict=True) if f == "send"]
    assert sends.count("invoke") > 0 and sends.count("ok") == sends.count("invoke")
    assert run.check()["results"]["writes"]["numbers"]["lost"] == 0
    frame = run._repr_html_()
    assert frame.startswith("<iframe srcdoc=")
    # the notebook's iframe cannot reach the bundle beside report.html: it is inside
    assert "src=&quot;plotly-" not in frame and frame.count("Plotly.newPlot(") >= 1
    assert len(frame) > 4_000_000
    run.cleanup()
    assert not run.directory.exists()


def test_a_temporary_run_directory_goes_with_its_run(tmp_path: Path) -> None:
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    with bo.run(scenario, seed=3) as run:
        assert run.directory.is_dir() and tmp_path not in run.directory.parents
        assert run.outcome == {0: "pass", 1: "fail", 3: "unknown"}[run.exit_code]
        assert run.passed is (run.outcome == "pass")
    assert not run.directory.exists()


# Loaded into the pytest runs below: writes down, for each test, the clusters its
# fixtures gave it (the factory's are seen only from outside, by their processes).
RECORDER = """
import json

import pytest

FIXTURES = ("brownout_cluster", "brownout_module_cluster", "brownout_session_cluster")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    with open(SEEN, "a") as f:
        for name in FIXTURES:
            cluster = item.funcargs.get(name)
            if cluster is not None:
                pids = [n["pid"] for n in cluster.status()["nodes"]]
                f.write(json.dumps({"test": item.name, "fixture": name, "pids": pids,
                                    "dir": str(cluster.directory)}) + "\\n")
    yield
"""


def run_user_tests(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                   files: dict[str, str]) -> tuple[pytest.RunResult, list[dict[str, Any]]]:
    monkeypatch.setenv(CACHE_ENV, str(KAFKA_CACHE))
    seen = pytester.path / "seen.jsonl"
    seen.touch()
    pytester.makepyfile(recorder=f"SEEN = {str(seen)!r}\n" + RECORDER)
    pytester.syspathinsert()
    for name, text in files.items():
        pytester.makepyfile(**{name.removesuffix(".py"): text})
    result = pytester.runpytest_inprocess("-p", "recorder", "-p", "no:randomly",
                                          "-p", "no:cacheprovider")
    return result, [json.loads(line) for line in seen.read_text().splitlines()]


@pytest.mark.timeout(scaled(420))
def test_the_pages_test_examples_pass(pytester: pytest.Pytester,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = python_blocks()
    orders = {"test_orders.py": blocks[2] + "\n" + blocks[3]}
    result, seen = run_user_tests(pytester, monkeypatch, orders)
    # the leader kill, two shapes, and one cluster per engine from the factory
    result.assert_outcomes(passed=4)
    assert [s["test"] for s in seen] == ["test_orders_survive_a_leader_kill",
                                         "test_in_both_shapes[kraft]",
                                         "test_in_both_shapes[combined]"]
    assert [len(s["pids"]) for s in seen] == [4, 2, 1]  # 3 + a controller; 1 + 1; combined
    assert len({s["dir"] for s in seen}) == 3
    assert not left_running(pytester.path)


def test_the_pages_shared_clusters_serve_several_tests(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    files = files_of(python_blocks()[4])
    assert set(files) == {"conftest.py", "test_shared.py"}
    result, seen = run_user_tests(pytester, monkeypatch, files)
    result.assert_outcomes(passed=3)
    dirs = {fixture: {s["dir"] for s in seen if s["fixture"] == fixture}
            for fixture in ("brownout_module_cluster", "brownout_session_cluster")}
    # one cluster per scope: the module's for its two tests, the session's for its one
    assert [len(d) for d in dirs.values()] == [1, 1], seen
    assert [s["test"] for s in seen] == ["test_write", "test_read", "test_session"]
    assert [len(s["pids"]) for s in seen] == [2, 2, 1]
    assert not left_running(pytester.path)


@pytest.mark.skipif(not netns.is_root(), reason="network namespaces need root")
@pytest.mark.brownout(brokers=1, network="netns", security="sasl")
def test_the_marker_shapes_the_cluster(brownout_cluster: bo.Cluster) -> None:
    assert brownout_cluster.broker_ids == [1]
    # In its namespace, with a SASL listener that client_config logs in to.
    config = brownout_cluster.client_config
    assert config["security.protocol"] == "SASL_PLAINTEXT"
    assert not config["bootstrap.servers"].startswith("127."), config
    brownout_cluster.create_topic("orders", replication_factor=1)
    producer = Producer({**config, "acks": "all", "message.timeout.ms": 30000})
    delivered: list[bool] = []
    for i in range(5):
        producer.produce("orders", str(i).encode(),
                         on_delivery=lambda e, m: delivered.append(e is None))
    assert producer.flush(scaled(45)) == 0
    assert delivered == [True] * 5
