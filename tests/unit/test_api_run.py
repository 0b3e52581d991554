"""brownout.api's pure parts: a run's three outcomes, the life of a temporary run
directory, engine names, the package's lazy top-level names and its py.typed."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from brownout.api import Run, engine_home
from brownout.cluster.distribution import DistributionError
from brownout.common.rundir import VERDICT_FILE


def finished(directory: Path, verdict: str, exit_code: int, **kw: bool) -> Run:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / VERDICT_FILE).write_text(json.dumps({"verdict": verdict}))
    return Run(directory, exit_code, **kw)


@pytest.mark.parametrize(("word", "code", "passed"),
                         [("pass", 0, True), ("fail", 1, False), ("unknown", 3, False)])
def test_three_outcomes_and_passed_means_pass_only(tmp_path, word, code, passed):
    run = finished(tmp_path / "run", word, code)
    assert run.outcome == word
    assert run.passed is passed


def test_a_verdict_outside_the_three_is_an_error(tmp_path):
    run = finished(tmp_path / "run", "maybe", 0)
    with pytest.raises(ValueError, match="maybe"):
        run.outcome  # noqa: B018


def test_a_temporary_directory_goes_with_cleanup_or_the_with_block(tmp_path):
    run = finished(tmp_path / "a", "pass", 0, temporary=True)
    run.cleanup()
    assert not run.directory.exists()
    run.cleanup()  # twice is fine
    with finished(tmp_path / "b", "pass", 0, temporary=True) as run:
        assert run.outcome == "pass"
    assert not run.directory.exists()


def test_a_temporary_directory_goes_with_its_run_object(tmp_path):
    directory = tmp_path / "run"
    run = finished(directory, "pass", 0, temporary=True)
    del run
    gc.collect()
    assert not directory.exists()


def test_a_named_or_kept_directory_stays(tmp_path):
    directory = tmp_path / "run"
    with finished(directory, "fail", 1) as run:
        run.cleanup()
    del run
    gc.collect()
    assert (directory / VERDICT_FILE).exists()


def test_engine_names_as_the_cli_takes_them(tmp_path, monkeypatch):
    monkeypatch.setenv("BROWNOUT_KAFKA_CACHE", str(tmp_path))  # nothing installed there
    assert engine_home(None) is None and engine_home("node") is None
    assert engine_home("brownout") is None  # as `brownout compare --engines` names it
    with pytest.raises(DistributionError, match="not installed"):
        engine_home("kafka:3.9.1")
    with pytest.raises(DistributionError, match="expected node, kafka"):
        engine_home("zookeeper")


def test_top_level_names_load_the_api_on_first_use():
    probe = ("import sys, brownout; light = 'brownout.api' not in sys.modules; "
             "from brownout import Cluster, Run, run; import brownout.api as api; "
             "print(light, Cluster is api.Cluster and Run is api.Run and run is api.run)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]
    import brownout

    with pytest.raises(AttributeError, match="no attribute 'Clusterr'"):
        brownout.Clusterr  # noqa: B018


def test_the_package_says_it_is_typed():
    assert resources.files("brownout").joinpath("py.typed").is_file()
    pyproject = Path(__file__).parents[2] / "pyproject.toml"
    assert '"brownout" = ["py.typed"]' in pyproject.read_text()
