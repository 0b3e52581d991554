"""What a killed run left is found by its running.json and identified precisely: the
owner's pid and start time, each recorded process's pid, start time and command line.
Real (sleeping) processes stand in for the pipeline; no cluster is involved here (the
integration tests SIGKILL real runs)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from brownout.check.run_dir import check_run
from brownout.scenarios.leftovers import (
    Running,
    clean_run,
    find_killed,
    run_dirs,
    run_state,
    start_ticks,
)


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(10)


def sleeper(procs: list[subprocess.Popen[bytes]], tag: str) -> subprocess.Popen[bytes]:
    """`sleep 600 TAG` in its own session: sleep adds its arguments up, so a tag is a
    small number that tells the command lines apart."""
    p = subprocess.Popen(["sleep", "600", tag], start_new_session=True)
    procs.append(p)
    deadline = time.monotonic() + 30
    while tag.encode() not in Path(f"/proc/{p.pid}/cmdline").read_bytes():
        assert time.monotonic() < deadline, "the sleeper did not exec"
        time.sleep(0.01)
    return p


def dead_owner(procs: list[subprocess.Popen[bytes]]) -> dict[str, int | None]:
    """The identity of a process that has exited (what a killed run's owner is)."""
    p = sleeper(procs, "0.002")
    identity = {"pid": p.pid, "start": start_ticks(p.pid)}
    p.kill()
    p.wait(10)
    return identity


def write_running(run_dir: Path, owner: dict[str, int | None],
                  processes: dict[str, dict[str, object]] | None = None) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "running.json").write_text(json.dumps(
        {"owner": owner, "cluster": None, "processes": processes or {}}))


def test_running_json_names_this_process_until_done(tmp_path: Path,
                                                    sleepers: list) -> None:
    running = Running(tmp_path, None)
    assert run_state(tmp_path) == "running"
    p = sleeper(sleepers, "0.001")
    running.track("pipeline", p.pid, ["0.001"])
    entry = json.loads((tmp_path / "running.json").read_text())["processes"]["pipeline"]
    assert entry["pid"] == entry["pgid"] == p.pid and entry["start"] == start_ticks(p.pid)
    running.track("pipeline", None)
    assert json.loads((tmp_path / "running.json").read_text())["processes"] == {}
    running.done()
    assert run_state(tmp_path) is None


def test_only_runs_whose_owner_is_gone_are_killed_runs(tmp_path: Path,
                                                       sleepers: list) -> None:
    write_running(tmp_path / "runs" / "dead", dead_owner(sleepers))
    write_running(tmp_path / "runs" / "alive", {"pid": os.getpid(),
                                                "start": start_ticks(os.getpid())})
    # this process's pid with another start time: a recycled pid, not the owner
    write_running(tmp_path / "runs" / "recycled", {"pid": os.getpid(), "start": 1})
    killed, live = find_killed([tmp_path / "runs"])
    assert sorted(p.name for p in killed) == ["dead", "recycled"]
    assert live == [((tmp_path / "runs" / "alive").absolute(), os.getpid())]
    with pytest.raises(Exception, match="still running"):
        clean_run(tmp_path / "runs" / "alive")


def test_a_run_directory_is_not_searched_inside(tmp_path: Path, sleepers: list) -> None:
    sweep = tmp_path / "sweep"
    write_running(sweep / "cell-01" / "run-001", dead_owner(sleepers))
    # a running.json below a run's own directories is none of clean's business
    write_running(sweep / "cell-01" / "run-001" / "cluster" / "x", dead_owner(sleepers))
    (sweep / "cell-01" / "run-002").mkdir(parents=True)
    (sweep / "cell-01" / "run-002" / "run.json").write_text("{}")
    write_running(sweep / "cell-01" / "run-002" / "nested", dead_owner(sleepers))
    assert [p.relative_to(sweep).as_posix() for p in run_dirs(sweep)] == ["cell-01/run-001"]


def test_clean_kills_exactly_the_recorded_processes(tmp_path: Path, sleepers: list) -> None:
    run_dir = tmp_path / "run"
    ours = sleeper(sleepers, "0.003")
    wrong_args = sleeper(sleepers, "0.004")
    wrong_start = sleeper(sleepers, "0.003")
    write_running(run_dir, dead_owner(sleepers), {
        "pipeline": {"pid": ours.pid, "pgid": ours.pid, "start": start_ticks(ours.pid),
                     "match": ["0.003"]},
        # the pid is alive but runs something else now
        "audit": {"pid": wrong_args.pid, "pgid": wrong_args.pid,
                  "start": start_ticks(wrong_args.pid), "match": ["0.003"]},
        # same command line, another start time: a recycled pid
        "other": {"pid": wrong_start.pid, "pgid": wrong_start.pid, "start": 1,
                  "match": ["0.003"]},
    })
    done = clean_run(run_dir)
    assert done == [f"pipeline: killed process group {ours.pid}"]
    assert ours.wait(10) is not None
    assert wrong_args.poll() is None and wrong_start.poll() is None
    assert not (run_dir / "running.json").exists()


def test_a_killed_run_is_marked_and_its_history_made_checkable(tmp_path: Path,
                                                              sleepers: list) -> None:
    run_dir = tmp_path / "run"
    write_running(run_dir, dead_owner(sleepers))
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": "r1", "started": time.time(), "bootstrap": "127.0.0.1:1",
        "topics": ["t"], "commands": []}))
    events = [
        {"index": 0, "time": 0.1, "process": "producer-0", "type": "invoke", "f": "send",
         "topic": "t", "msg_id": "m0", "acks": "all"},
        {"index": 1, "time": 0.2, "process": "producer-0", "type": "ok", "f": "send",
         "topic": "t", "partition": 1, "offset": 0, "msg_id": "m0", "acks": "all"},
        {"index": 2, "time": 0.3, "process": "consumer-0", "type": "ok", "f": "poll",
         "topic": "t", "partition": 1, "offset": 0, "msg_id": "m0"},
    ]
    # the process died mid-line: only the JSON lines are there, the last one torn
    (run_dir / "history.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in events) + '{"index": 3, "ti')
    done = clean_run(run_dir)
    assert "history: history.jsonl converted to history.parquet" in done
    assert "final read: not read back (1 partition(s) unknown)" in done
    info = json.loads((run_dir / "run.json").read_text())
    assert info["interrupted"]["by"] == "killed"
    marks = json.loads((run_dir / "high-watermarks.json").read_text())
    assert marks["complete"] is False
    assert marks["topics"]["t"]["1"]["error"] == "NOT_READ_BACK"
    # The acknowledged write and the delivered record are unknown, not lost or missing.
    report = check_run(run_dir).to_dict()
    writes = report["results"]["writes"]
    assert writes["numbers"]["acknowledged_unread"] == 1
    assert writes["anomalies"].get("lost-write", {}).get("count", 0) == 0
    assert report["results"]["consumers"]["valid"] is True


def test_a_kept_cluster_is_left_running(tmp_path: Path, sleepers: list) -> None:
    run_dir = tmp_path / "run"
    write_running(run_dir, dead_owner(sleepers))
    record = json.loads((run_dir / "running.json").read_text())
    cluster = run_dir / "cluster"
    cluster.mkdir()
    (cluster / "cluster.json").write_text("{}")  # not even read: nothing is stopped
    record.update(cluster=str(cluster), keep_cluster=True)
    (run_dir / "running.json").write_text(json.dumps(record))
    assert clean_run(run_dir) == [
        f"cluster: left running (--keep-cluster); stop it with `brownout down --dir "
        f"{cluster}`"]
