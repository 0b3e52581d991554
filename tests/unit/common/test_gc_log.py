"""A Kafka JVM's GC log: which lines are stop-the-world pauses, how long, and when."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from brownout.common.gc_log import (
    GcPause,
    gc_log_files,
    parse_pause,
    parse_pauses,
    parse_time,
    read_gc_pauses,
)

# Lines as JDK 17's G1 writes them with -Xlog:gc*:file=gc.log:time,tags (the JVM Kafka
# 4.4.0 and 3.9.2 run on in the lab): the tags column padded to a width.
YOUNG = ("[2026-11-28T08:31:02.123+0000][gc          ] GC(12) Pause Young (Normal) "
         "(G1 Evacuation Pause) 45M->12M(256M) 123.456ms")
YOUNG_START = ("[2026-11-28T08:31:02.000+0000][gc,start    ] GC(12) Pause Young (Normal) "
               "(G1 Evacuation Pause)")
REMARK = "[2026-11-28T08:30:33.612+0000][gc          ] GC(6) Pause Remark 145M->145M(258M) 5.128ms"
CLEANUP = ("[2026-11-28T08:30:33.631+0000][gc          ] GC(6) Pause Cleanup "
           "145M->145M(258M) 0.621ms")
FULL = ("[2026-11-28T08:40:00.500+0000][gc          ] GC(40) Pause Full (G1 Compaction Pause) "
        "250M->80M(256M) 2345.6ms")
CONCURRENT = ("[2026-11-28T08:30:38.623+0000][gc          ] GC(9) Concurrent Mark Cycle "
              "495.160ms")
PHASE = "[2026-11-28T08:30:29.115+0000][gc,phases   ] GC(0)   Pre Evacuate Collection Set: 0.1ms"
CPU = "[2026-11-28T08:30:29.115+0000][gc,cpu      ] GC(0) User=0.03s Sys=0.01s Real=0.08s"
USING = "[2026-11-28T08:30:28.001+0000][gc] Using G1"


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_a_young_pause_gives_its_id_cause_length_and_end() -> None:
    pause = parse_pause(YOUNG)
    assert pause == GcPause(12, "Pause Young (Normal) (G1 Evacuation Pause)",
                            _epoch("2026-11-28T08:31:02.123"), 123.456)
    assert pause.start == pytest.approx(pause.end - 0.123456)
    assert pause.describe() == "GC(12) Pause Young (Normal) (G1 Evacuation Pause)"


@pytest.mark.parametrize(("line", "what", "ms"), [
    (REMARK, "Pause Remark", 5.128),
    (CLEANUP, "Pause Cleanup", 0.621),
    (FULL, "Pause Full (G1 Compaction Pause)", 2345.6),
])
def test_remark_cleanup_and_full_pauses_count(line: str, what: str, ms: float) -> None:
    pause = parse_pause(line)
    assert pause is not None and (pause.what, pause.ms) == (what, ms)


@pytest.mark.parametrize("line", [YOUNG_START, CONCURRENT, PHASE, CPU, USING, "", "garbage",
                                  YOUNG.replace("2026-11-28", "2026-13-28")])
def test_lines_that_are_not_a_finished_pause_give_none(line: str) -> None:
    # the start of a pause has no length; a concurrent phase does not stop the JVM
    assert parse_pause(line) is None


def test_the_offset_in_the_time_decorator_is_honoured() -> None:
    utc = parse_time("2026-11-28T08:31:02.123+0000")
    assert parse_time("2026-11-28T09:31:02.123+0100") == utc
    assert utc == pytest.approx(_epoch("2026-11-28T08:31:02.123"))


def test_parse_pauses_keeps_only_pauses_in_file_order() -> None:
    lines = [USING, YOUNG_START, YOUNG + "\n", PHASE, CPU, CONCURRENT, REMARK, CLEANUP]
    assert [p.gc_id for p in parse_pauses(lines)] == [12, 6, 6]


def test_a_node_without_a_gc_log_was_not_observed(tmp_path: Path) -> None:
    assert read_gc_pauses(tmp_path) is None
    (tmp_path / "gc.log").write_text(USING + "\n")
    assert read_gc_pauses(tmp_path) == []  # observed: no pause


def test_rotated_logs_of_earlier_jvms_are_read_and_sorted_by_time(tmp_path: Path) -> None:
    # the JVM rotates gc.log to gc.log.N when it starts and finds one (a restart)
    (tmp_path / "gc.log").write_text(FULL + "\n")
    (tmp_path / "gc.log.1").write_text(YOUNG + "\n")
    (tmp_path / "gc.log.0").write_text(REMARK + "\n" + CLEANUP + "\n")
    (tmp_path / "gc.log.old").write_text(YOUNG + "\n")  # not the JVM's: ignored
    assert [p.name for p in gc_log_files(tmp_path)] == ["gc.log", "gc.log.0", "gc.log.1"]
    pauses = read_gc_pauses(tmp_path)
    assert pauses is not None
    assert [(p.gc_id, p.what) for p in pauses] == [
        (6, "Pause Remark"), (6, "Pause Cleanup"),
        (12, "Pause Young (Normal) (G1 Evacuation Pause)"),
        (40, "Pause Full (G1 Compaction Pause)")]
