"""Comparing engines (scenarios/compare.py): hand-made runs' documents in, rows out; the
comparison written from hand-made run directories; compare.html; the command's usage
errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _cli import invoke
from rich.console import Console

from brownout.cluster.distribution import DEFAULT_KAFKA_3, DEFAULT_KAFKA_4, MARKER
from brownout.report.compare_page import build_compare_html
from brownout.report.compare_text import NOT_OBSERVED, RATE, SPREAD, cell_text
from brownout.scenarios.compare import (
    CompareError,
    Engine,
    RunDocuments,
    apart,
    comparison_rows,
    parse_engines,
    ranges_apart_by_chance,
    run_values,
    why,
)
from brownout.scenarios.compare_run import (
    pipeline_documents,
    print_comparison,
    summarise_compare,
)
from brownout.scenarios.verdict import combined_exit_code

KAFKA = f"kafka:{DEFAULT_KAFKA_4}"


def check(lost: int = 0, info: int = 0, fail: int = 0, duplicates: int = 0,
          windows: dict[str, float] | None = None, recovery: list[float | None] | None = None,
          rebalances: int | None = 0, acks_all: bool = True,
          reorders: int = 0) -> dict[str, Any]:
    """A check.json with the parts the comparison reads."""
    anomalies: dict[str, Any] = {}
    if duplicates:
        anomalies["duplicate"] = {"count": duplicates}
    if lost:
        anomalies["lost-write"] = {"count": lost}
    if reorders:
        anomalies["producer-reorder"] = {"count": reorders}
    windows = {"t-0": 1.0, "t-1": 2.0} if windows is None else windows
    by_acks = {"all": {"attempted": 10, "succeeded": 8,
                       "longest_unavailable": {"seconds": max(windows.values(), default=0)},
                       "longest_unavailable_by_partition": {
                           p: {"seconds": s, "start": 1.0, "end": 1.0 + s}
                           for p, s in windows.items()}}} if acks_all else {}
    results: dict[str, Any] = {
        "writes": {"valid": not lost, "anomalies": anomalies, "numbers": {
            "lost": lost, "acknowledged": 100, "by_acks": {
                "all": {"ok": 100, "info": info, "fail": fail},
                "1": {"ok": 5, "info": 1, "fail": 0}}}},
        "availability": {"valid": True, "anomalies": {}, "numbers": {
            "by_acks": by_acks,
            "faults": [{"action": "kill", "first_ok_all_after": r}
                       for r in (recovery or [])]}},
    }
    if rebalances is not None:
        results["rebalances"] = {"valid": True, "anomalies": {},
                                 "numbers": {"rebalances": rebalances}}
    return {"valid": True, "results": results}


def verdict(word: str = "pass", stalls: list[float] | None = None) -> dict[str, Any]:
    return {"verdict": word, "fault_window": [5.0, 20.0], "consumers_stopped": 30.0,
            "error": None, "unknown_reason": "node 1 stalled" if word == "unknown" else None,
            "expectations": [{"name": "isr_recovered", "passed": True},
                             {"name": "acked_writes_lost[acks-all]",
                              "passed": word != "fail"}],
            "node_stalls": {"limit_ms": 2000,
                            "stalls": [{"node": 1, "start": 1.0, "end": 2.0, "lag_ms": ms}
                                       for ms in stalls or []]}}


def run(name: str = "run-001", word: str = "pass", *, errors: dict[str, int] | None = None,
        causes: list[dict[str, Any]] | None = None, stalls: bool = False,
        **check_args: Any) -> RunDocuments:
    """A run; `causes` are its duplicates.json rows (None: none written)."""
    return RunDocuments(name, verdict(word, [300.0, 1200.0] if stalls else []),
                        check(**check_args), causes, errors, stalls)


def rows_by_measure(engines: dict[str, list[RunDocuments]]) -> dict[str, dict[str, Any]]:
    return {r["measure"]: r for r in comparison_rows(engines)}


# -- engines ------------------------------------------------------------------------


def test_engines_parse_with_the_node_first_and_kafka_as_its_default_version() -> None:
    engines = parse_engines("brownout, kafka,kafka:3.9.2")
    assert [e.label for e in engines] == ["brownout", KAFKA, "kafka:3.9.2"]
    assert [e.directory for e in engines] == [
        "brownout", f"kafka-{DEFAULT_KAFKA_4}", "kafka-3.9.2"]
    assert [e.option for e in engines] == [None, KAFKA, "kafka:3.9.2"]
    assert parse_engines("node,kafka:3.9.2")[0] == Engine("brownout", None)
    # A release line is its default version, so kafka:3.9 and kafka:3.9.2 are one engine.
    assert [e.label for e in parse_engines("node,kafka:3.9")] == ["brownout", "kafka:3.9.2"]


@pytest.mark.parametrize(("text", "words"), [
    ("brownout", "at least two engines"),
    ("brownout,bogus", "unknown engine 'bogus'"),
    ("brownout,kafka:x", "'x' is not a Kafka version"),
    ("brownout,,kafka", "comma-separated list"),
    ("node,brownout", "names brownout twice"),
    (f"kafka,{KAFKA}", f"names {KAFKA} twice"),
    ("kafka:3.9,kafka:3.9.2", "names kafka:3.9.2 twice"),
    ("brownout,kafka:4.1", "'4.1' is a release line without a default version"),
])
def test_an_engine_list_that_cannot_be_compared_is_refused(text: str, words: str) -> None:
    with pytest.raises(CompareError, match="--engines") as e:
        parse_engines(text)
    assert words in str(e.value)


# -- one run ------------------------------------------------------------------------


def test_a_runs_measures_come_from_its_check_verdict_duplicates_and_errors() -> None:
    v = run_values(run(lost=3, info=4, fail=2, duplicates=2, recovery=[1.5, None, 4.0],
                       reorders=1, errors={"NOT_LEADER_OR_FOLLOWER": 5, "_MSG_TIMED_OUT": 4},
                       causes=[{"cause": "epoch-bump"}, {"cause": "epoch-bump"}],
                       stalls=True))
    assert v.values == {
        "acked_writes_lost": 3, "acknowledged_writes": 100, "duplicates": 2,
        "indeterminate_sends": 5, "failed_sends": 2,  # every acks level's info and fail
        "anomalies.writes[producer-reorder]": 1,
        "longest_unavailable_seconds": 2.0,
        "partition_unavailable[t-0]": 1.0, "partition_unavailable[t-1]": 2.0,
        "slowest_recovery_seconds": 4.0, "rebalances": 0,
        "duplicates[epoch-bump]": 2, "client_errors": 9,
        "client_errors[NOT_LEADER_OR_FOLLOWER]": 5, "client_errors[_MSG_TIMED_OUT]": 4,
        "longest_node_stall_seconds": 1.2,
    }
    assert v.families == {"anomalies.writes", "anomalies.availability",
                          "anomalies.rebalances", "duplicates", "client_errors"}


def test_a_runs_pipeline_measures() -> None:
    pipeline = {"status": "failed", "restarts": 2, "audit_valid": False, "max_lag": 300.0,
                "longest_batch_gap": 12.5, "longest_behind": 20.0}
    v = run_values(RunDocuments("run-001", verdict(), None, pipeline=pipeline)).values
    assert v == {"pipeline_failed": 1.0, "pipeline_restarts": 2.0,
                 "pipeline_audit_differs": 1.0, "pipeline_max_lag": 300.0,
                 "pipeline_longest_batch_gap_seconds": 12.5,
                 "pipeline_longest_behind_seconds": 20.0}
    # No audit and no fault: those two are not measured; a run that went on is no failure
    quiet = run_values(RunDocuments("run-001", verdict(), None, pipeline={
        "status": "stopped", "restarts": 0, "audit_valid": None, "max_lag": 5.0})).values
    assert quiet == {"pipeline_failed": 0.0, "pipeline_restarts": 0.0, "pipeline_max_lag": 5.0}
    assert not any(k.startswith("pipeline") for k in run_values(run()).values)


def test_what_a_run_did_not_measure_is_absent_not_zero() -> None:
    bare = RunDocuments("run-001", verdict(), check(acks_all=False, rebalances=None))
    v = run_values(bare)
    for key in ("longest_unavailable_seconds", "slowest_recovery_seconds", "rebalances",
                "client_errors", "longest_node_stall_seconds"):
        assert key not in v.values, key
    assert not any(k.startswith("partition_unavailable") for k in v.values)
    assert "duplicates" not in v.families and "client_errors" not in v.families
    crashed = RunDocuments("run-001", verdict(), {"results": {
        "writes": {"valid": "unknown", "error": "ValueError: boom"}}})
    assert run_values(crashed).values == {}
    assert run_values(RunDocuments("run-001", None, None)).values == {}


def test_a_run_without_a_verdict_failed() -> None:
    assert RunDocuments("run-001", None, None).word == "fail"
    assert why(RunDocuments("run-001", None, None))["error"] == "no verdict.json"
    assert why(run("run-001", "unknown"))["unknown_reason"] == "node 1 stalled"
    assert RunDocuments("run-001", {"verdict": "odd"}, None).word == "fail"
    assert run("run-001", "unknown").word == "unknown"


# -- rows ---------------------------------------------------------------------------


def test_one_row_per_measure_one_cell_per_engine() -> None:
    rows = comparison_rows({"brownout": [run(stalls=True)], KAFKA: [run()]})
    assert rows[0]["measure"] == "verdicts"
    assert all(list(r["cells"]) == ["brownout", KAFKA] for r in rows)
    measures = [r["measure"] for r in rows]
    # a family's rows follow their own row; the checkers' anomalies come last
    assert measures.index("longest_unavailable_seconds") + 1 == measures.index(
        "partition_unavailable[t-0]")
    by = {r["measure"]: r for r in rows}
    assert by["verdicts"]["cells"]["brownout"]["pass"] == 1
    assert by["acked_writes_lost"]["kind"] == RATE
    assert by["partition_unavailable[t-1]"]["kind"] == SPREAD
    assert by["partition_unavailable[t-1]"]["label"].startswith("partition t-1:")


def test_what_an_engine_cannot_observe_is_not_observed_never_zero() -> None:
    by = rows_by_measure({"brownout": [run(stalls=True, errors={"X": 1})],
                          KAFKA: [run(windows={"t-0": 3.0})]})
    assert by["longest_node_stall_seconds"]["cells"]["brownout"]["median"] == 1.2
    assert by["longest_node_stall_seconds"]["cells"][KAFKA] == {"observed": False}
    assert by["client_errors[X]"]["cells"][KAFKA] == {"observed": False}  # no history
    assert by["partition_unavailable[t-1]"]["cells"][KAFKA] == {"observed": False}
    # not measured by either engine: still a row, not observed in both
    bare = rows_by_measure({"brownout": [RunDocuments("run-001", verdict(), None)],
                            KAFKA: [RunDocuments("run-001", verdict(), None)]})
    assert bare["acked_writes_lost"]["cells"] == {"brownout": {"observed": False},
                                                  KAFKA: {"observed": False}}
    assert cell_text(RATE, {"observed": False}) == NOT_OBSERVED


def test_a_name_absent_from_a_family_a_run_measured_in_full_is_zero() -> None:
    by = rows_by_measure({
        "brownout": [run("run-001", errors={}, causes=[]),
                     run("run-002", errors={}, causes=[])],
        KAFKA: [run("run-001", errors={"NOT_ENOUGH_REPLICAS": 7},
                    causes=[{"cause": "same-producer-epoch"}]),
                run("run-002", errors={}, causes=[])]})
    cell = by["client_errors[NOT_ENOUGH_REPLICAS]"]["cells"]
    assert cell["brownout"]["observed"] and cell["brownout"]["count"] == 0
    assert cell["brownout"]["runs"] == 2 and cell["brownout"]["max"] == 0
    assert (cell[KAFKA]["count"], cell[KAFKA]["runs"], cell[KAFKA]["max"]) == (1, 2, 7)
    assert by["duplicates[same-producer-epoch]"]["cells"]["brownout"]["count"] == 0


def test_unknown_runs_count_in_the_verdicts_only() -> None:
    by = rows_by_measure({"brownout": [run("run-001", lost=5), run("run-002", "unknown",
                                                                    lost=900)],
                          KAFKA: [run("run-001"), run("run-002", "fail")]})
    v = by["verdicts"]["cells"]
    assert (v["brownout"]["pass"], v["brownout"]["fail"], v["brownout"]["unknown"]) == (1, 0, 1)
    assert (v["brownout"]["count"], v["brownout"]["runs"]) == (1, 1)  # passed of judged
    assert (v[KAFKA]["count"], v[KAFKA]["runs"]) == (1, 2)
    lost = by["acked_writes_lost"]["cells"]["brownout"]
    assert (lost["count"], lost["runs"], lost["max"]) == (1, 1, 5)


def test_rates_are_flagged_where_their_wilson_intervals_do_not_overlap() -> None:
    never = [run(f"run-{k:03d}") for k in range(1, 11)]
    always = [run(f"run-{k:03d}", lost=2) for k in range(1, 11)]
    by = rows_by_measure({"brownout": never, KAFKA: always})
    cells = by["acked_writes_lost"]["cells"]
    assert cells["brownout"]["interval95"] == [0.0, 0.2775]
    assert cells[KAFKA]["interval95"] == [0.7225, 1.0]
    assert by["acked_writes_lost"]["differ"] == [["brownout", KAFKA]]
    assert by["failed_sends"]["differ"] == []
    # one run each: 0 of 1 and 1 of 1 overlap ([0, 0.79] and [0.21, 1])
    one = rows_by_measure({"brownout": never[:1], KAFKA: always[:1]})
    assert one["acked_writes_lost"]["differ"] == []


def test_durations_are_flagged_where_ranges_do_not_overlap_with_enough_runs() -> None:
    def runs(n: int, seconds: float) -> list[RunDocuments]:
        return [run(f"run-{k:03d}", windows={"t-0": seconds + k / 10}) for k in range(n)]

    assert ranges_apart_by_chance(1, 1) == 1.0
    assert ranges_apart_by_chance(3, 3) == pytest.approx(0.1)
    assert ranges_apart_by_chance(4, 4) == pytest.approx(2 / 70)
    key = "partition_unavailable[t-0]"
    four = rows_by_measure({"brownout": runs(4, 2.0), KAFKA: runs(4, 9.0)})[key]
    assert four["differ"] == [["brownout", KAFKA]]
    assert four["cells"]["brownout"] == {"observed": True, "runs": 4, "median": 2.15,
                                         "min": 2.0, "max": 2.3}
    # apart, but three runs each could be that by chance one time in ten
    assert rows_by_measure({"brownout": runs(3, 2.0), KAFKA: runs(3, 9.0)})[key][
        "differ"] == []
    # overlapping ranges never differ
    assert rows_by_measure({"brownout": runs(5, 2.0), KAFKA: runs(5, 2.2)})[key][
        "differ"] == []
    assert not apart(SPREAD, {"observed": False}, four["cells"][KAFKA])


def test_three_engines_name_the_pairs_that_differ() -> None:
    never = [run(f"run-{k:03d}") for k in range(1, 11)]
    always = [run(f"run-{k:03d}", lost=1) for k in range(1, 11)]
    by = rows_by_measure({"brownout": never, KAFKA: always, "kafka:3.9.2": always})
    assert by["acked_writes_lost"]["differ"] == [["brownout", KAFKA],
                                                 ["brownout", "kafka:3.9.2"]]


def test_cell_text() -> None:
    rows = rows_by_measure({"brownout": [run(lost=4)], KAFKA: [run()]})
    assert cell_text("verdicts", rows["verdicts"]["cells"]["brownout"]) == \
        "1 pass / 0 fail / 0 unknown"
    assert cell_text(RATE, rows["acked_writes_lost"]["cells"]["brownout"]) == \
        "1/1 runs [0.21-1.00], median 4 (4-4)"
    assert cell_text(SPREAD, rows["partition_unavailable[t-1]"]["cells"][KAFKA], "s") == \
        "median 2 s (2-2)"


def test_exit_status_fail_over_unknown_over_pass() -> None:
    assert combined_exit_code([0, 0]) == 0
    assert combined_exit_code([0, 3]) == 3
    assert combined_exit_code([3, 1, 0]) == 1


# -- the comparison from run directories, its page and table -------------------------


def write_run(directory: Path, word: str, **check_args: Any) -> None:
    directory.mkdir(parents=True)
    (directory / "verdict.json").write_text(json.dumps(verdict(word)))
    (directory / "check.json").write_text(json.dumps(check(**check_args)))


def test_the_comparison_is_written_from_each_engines_run_directories(tmp_path: Path) -> None:
    engines = parse_engines("brownout,kafka")
    write_run(tmp_path / "brownout" / "run-001", "pass")
    write_run(tmp_path / "brownout" / "run-002", "pass")
    (tmp_path / "brownout" / "summary.json").write_text('{"exit_code": 0}')
    write_run(tmp_path / engines[1].directory / "run-001", "pass")
    write_run(tmp_path / engines[1].directory / "run-002", "fail", lost=3)
    (tmp_path / engines[1].directory / "summary.json").write_text('{"exit_code": 1}')
    comparison = summarise_compare(tmp_path, engines, 2, 7, scenario="s",
                                   settings={"cluster.brokers": 3})
    written = json.loads((tmp_path / "compare.json").read_text())
    assert written == comparison
    assert next(iter(written)) == "schema_version" and written["schema_version"] == 1
    assert written["exit_code"] == 1
    assert written["set"] == {"cluster.brokers": 3}
    kafka = written["engines"][1]
    assert kafka["engine"] == KAFKA and kafka["kafka_version"] == DEFAULT_KAFKA_4
    assert kafka["verdicts"] == {"pass": 1, "fail": 1, "unknown": 0}
    assert [r["report"] for r in kafka["runs"]] == [
        f"kafka-{DEFAULT_KAFKA_4}/run-001/report.html",
        f"kafka-{DEFAULT_KAFKA_4}/run-002/report.html"]
    assert written["engines"][0]["runs"][0]["seed"] == kafka["runs"][0]["seed"]
    assert kafka["runs"][1]["failed"] == ["acked_writes_lost[acks-all]"]
    assert kafka["runs"][0]["failed"] == [] and kafka["runs"][0]["error"] is None
    by = {r["measure"]: r for r in written["rows"]}
    assert by["acked_writes_lost"]["cells"][KAFKA]["count"] == 1
    # no history in these directories: client errors were not observed
    assert by["client_errors"]["cells"]["brownout"] == {"observed": False}

    console = Console(width=220, record=True)
    print_comparison(comparison, console)
    text = console.export_text()
    assert "brownout: 2 passed, 0 failed, 0 unknown" in text
    assert f"{KAFKA}: 1 passed, 1 failed, 0 unknown" in text
    assert "not observed" in text and "1/2 runs [0.09-0.91], median 1.5 (0-3)" in text
    assert "run-002 fail: acked_writes_lost[acks-all]" in text
    assert "run-001 pass" not in text  # nothing to say about a run that passed

    page = build_compare_html(comparison)
    assert f"<h1>s: brownout vs {KAFKA}</h1>" in page
    assert '<td class="not-observed">not observed</td>' in page
    assert f'href="kafka-{DEFAULT_KAFKA_4}/run-002/report.html"' in page
    assert "cluster.brokers=3" in page
    assert '<span class="note">acked_writes_lost[acks-all]</span>' in page


def test_a_runs_pipeline_is_read_from_its_directory(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    started = 1000.0
    (tmp_path / "run.json").write_text(json.dumps({"started": started}))
    (tmp_path / "pipeline-check.json").write_text(json.dumps({"valid": True}))
    # acknowledged: offsets 0-9 by 2 s, 10-29 by 6 s (history time)
    pq.write_table(pa.table({
        "f": ["send"] * 4, "time": [1.0, 2.0, 5.0, 6.0], "topic": ["t"] * 4,
        "partition": [0] * 4, "offset": [4, 9, 19, 29], "type": ["ok", "ok", "ok", "fail"]}),
        tmp_path / "history.parquet")
    progress = tmp_path / "pipeline" / "progress.jsonl"
    progress.parent.mkdir()
    batches = [(2.5, 10), (3.5, 10), (5.5, 10), (7.0, 20)]  # (history time, processed)
    progress.write_text("".join(json.dumps({"time": started + t, "query": "t.ledger",
                                            "end_offsets": {"t": {"0": n}}}) + "\n"
                                for t, n in batches))
    pipeline = {"status": "stopped", "restarts": 0, "out": str(progress.parent)}
    docs = pipeline_documents(tmp_path, {"pipeline": pipeline, "fault_window": [3.0, 9.0]})
    # lag 0, 0, 10 (offsets 10-19 acknowledged at 5 s), 0: the failed send is not counted
    assert docs == {"status": "stopped", "restarts": 0, "audit_valid": True,
                    "max_lag": 10.0, "longest_batch_gap": 2.0, "longest_behind": 3.5}
    assert pipeline_documents(tmp_path, {"pipeline": None}) is None


def test_a_row_that_differs_is_marked_on_the_page() -> None:
    never = [run(f"run-{k:03d}") for k in range(1, 11)]
    always = [run(f"run-{k:03d}", lost=2) for k in range(1, 11)]
    rows = comparison_rows({"brownout": never, KAFKA: always})
    comparison = {"scenario": "s", "seed": 0, "repeat": 10, "set": {}, "rows": rows,
                  "engines": [{"engine": e, "kafka_version": None, "summary": "x",
                               "runs": []} for e in ("brownout", KAFKA)]}
    page = build_compare_html(comparison)
    assert page.count('<tr class="differ">') == 1
    assert "1 measure(s) differ beyond chance" in page


# -- the command's usage errors --------------------------------------------------------


@pytest.mark.parametrize(("args", "words"), [
    (["--engines", "brownout"], "at least two engines"),
    (["--engines", "brownout,bogus"], "unknown engine 'bogus'"),
    (["--engines", "brownout,kafka:0.0.1"], "Apache Kafka 0.0.1 is not installed"),
    (["--repeat", "0"], "--repeat must be at least 1 (got 0)"),
    (["--jobs", "0"], "--jobs must be at least 1 (got 0)"),
    (["--set", "workloads.acks-all.rate=1,2"], "compare sets one value per parameter"),
    (["--set", "nonsense"], "--set expects PARAMETER=VALUE"),
    (["--set", "cluster.brokerz=3"], "brokerz"),
])
def test_usage_errors_exit_2_before_anything_runs(tmp_path: Path, args: list[str],
                                                   words: str) -> None:
    out = tmp_path / "never"
    result = invoke(["compare", "minority-outage", *args, "--out", str(out)],
                    env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert words in result.output
    assert not out.exists()


def test_an_unknown_scenario_exits_2(tmp_path: Path) -> None:
    result = invoke(["compare", "minority-outag", "--engines", "brownout,kafka:0.0.1",
                     "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    assert "minority-outag" in result.output and "not installed" not in result.output


@pytest.fixture
def kafka_cache(tmp_path: Path) -> dict[str, str]:
    """The environment of a stand-in cache holding the default 4.x and 3.x versions
    (only their jar names are read before anything runs)."""
    for version in (DEFAULT_KAFKA_4, DEFAULT_KAFKA_3):
        jars = [f"kafka_2.13-{version}.jar", f"kafka-clients-{version}.jar"]
        home = tmp_path / "cache" / version
        (home / "libs").mkdir(parents=True)
        for name in jars:
            (home / "libs" / name).write_bytes(b"jar")
        (home / MARKER).write_text(json.dumps({"version": version, "jars": jars}))
    return {"BROWNOUT_KAFKA_CACHE": str(tmp_path / "cache"), "COLUMNS": "200"}


def test_dry_run_checks_the_scenario_with_its_settings_and_runs_nothing(
        tmp_path: Path, kafka_cache: dict[str, str]) -> None:
    out = tmp_path / "never"
    result = invoke([
        "compare", "minority-outage", "--engines", f"brownout,kafka,kafka:{DEFAULT_KAFKA_3}",
        "--set", "workloads.acks-all.rate=50", "--dry-run", "--out", str(out)],
        env=kafka_cache)
    assert result.exit_code == 0, result.output
    assert (f"engines: brownout, {KAFKA}, kafka:{DEFAULT_KAFKA_3}; 1 run(s) each"
            in result.output)
    assert "set: workloads.acks-all.rate=50" in result.output
    assert not out.exists()


def test_a_file_where_the_comparison_would_go_is_a_usage_error(
        tmp_path: Path, kafka_cache: dict[str, str]) -> None:
    file = tmp_path / "taken"
    file.write_text("kept\n")
    result = invoke(["compare", "minority-outage", "--out", str(file / "compare")],
                    env=kafka_cache)
    assert result.exit_code == 2, result.output
    assert f"--out {file / 'compare'}: {file} is a file, not a directory" in result.output
    assert file.read_text() == "kept\n"


def test_a_scenario_only_brownouts_node_can_run_is_refused(
        kafka_cache: dict[str, str]) -> None:
    result = invoke(["compare", "power-loss", "--dry-run"], env=kafka_cache)
    assert result.exit_code == 2
    uninstalled = invoke(
        ["compare", "minority-outage", "--engines", "brownout,kafka:4.0.0", "--dry-run"],
        env=kafka_cache)
    assert uninstalled.exit_code == 2
    assert "brownout kafka install 4.0.0" in uninstalled.output
    assert "cannot run on Apache Kafka: power-loss needs Brownout's own nodes" in result.output


def test_the_table_says_which_pairs_differ_among_three_engines() -> None:
    from brownout.scenarios.compare_run import differ_text

    row = {"differ": [["brownout", KAFKA], ["brownout", "kafka:3.9.2"]]}
    assert differ_text(row, 3) == f"brownout vs {KAFKA}, brownout vs kafka:3.9.2"
    assert differ_text({"differ": [["brownout", KAFKA]]}, 2) == "yes"
    assert differ_text({"differ": []}, 2) == ""
