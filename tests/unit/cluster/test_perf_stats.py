"""What the perf-test twins print, from hand-made latencies and times: Kafka 4.x's
producer window and summary lines (its latency sampling and percentiles), the consumer's
header, result and progress lines, Java's number formatting and SimpleDateFormat."""

import datetime
import math

import pytest

from brownout.cluster.perf_stats import (
    DEFAULT_DATE_FORMAT,
    DateFormatError,
    ProducerStats,
    check_date_format,
    consumer_header,
    consumer_progress_line,
    consumer_total_line,
    format_date,
    java_div,
    java_fixed,
    percentiles,
    sampling_interval,
    timeout_warning,
    warmup_line,
)

MIB = 1024 * 1024


@pytest.mark.parametrize(("value", "digits", "text"), [
    (0.25, 1, "0.3"),  # Python's round-half-even on the binary value gives 0.2
    (0.125, 2, "0.13"),
    (1.005, 2, "1.01"),  # 1.00499999... in binary; Java rounds its shortest decimal
    (2.5, 0, "3"),
    (0.3, 6, "0.300000"),
    (1234.56789, 4, "1234.5679"),
    (0.0, 2, "0.00"),
    (math.nan, 4, "NaN"),
    (math.inf, 1, "Infinity"),
    (-math.inf, 1, "-Infinity"),
])
def test_fixed_point_is_javas(value, digits, text):
    assert java_fixed(value, digits) == text


def test_division_by_zero_is_javas():
    assert java_div(3.0, 0.0) == math.inf
    assert math.isnan(java_div(0.0, 0.0))
    assert java_div(-1.0, 0.0) == -math.inf


def test_percentiles_take_the_sorted_sample_at_p_times_n_without_interpolation():
    assert percentiles([10, 3, 5]) == [5, 10, 10, 10]
    samples = list(range(1000, 0, -1))  # 1..1000, unsorted
    assert percentiles(samples) == [501, 951, 991, 1000]
    assert percentiles([]) == [0, 0, 0, 0]  # Kafka's array of zeros


def test_at_most_half_a_million_latencies_are_kept():
    assert sampling_interval(10) == 1
    assert sampling_interval(500_000) == 1
    assert sampling_interval(1_000_000) == 2
    assert sampling_interval(1_499_999) == 2
    stats = ProducerStats(1_000_000, 5000, 0, lambda _: None)
    for latency in range(10):
        stats.record(latency, 1, 1)
    assert stats.samples == [0, 2, 4, 6, 8]  # every other acknowledged record


def test_a_window_line_when_a_record_arrives_after_the_interval_then_the_total():
    lines: list[str] = []
    stats = ProducerStats(10, 5000, 0, lines.append)
    stats.record(3, 100, 1000)
    stats.record(5, 100, 2000)
    assert lines == []
    stats.record(10, 100, 5000)
    assert lines == ["3 records sent, 0.6 records/sec (0.00 MB/sec), 6.0 ms avg latency, "
                     "10.0 ms max latency."]
    stats.record(1, MIB, 6000)  # the next window starts at 5000
    assert stats.window.count == 1
    assert stats.total_line(10_000) == (
        "4 records sent, 0.400000 records/sec (0.10 MB/sec), 4.75 ms avg latency, "
        "10.00 ms max latency, 5 ms 50th, 10 ms 95th, 10 ms 99th, 10 ms 99.9th.")


def test_no_record_acknowledged_prints_javas_nan_average():
    stats = ProducerStats(5, 5000, 0, lambda _: None)
    assert stats.total_line(1000) == (
        "0 records sent, 0.000000 records/sec (0.00 MB/sec), NaN ms avg latency, "
        "0.00 ms max latency, 0 ms 50th, 0 ms 95th, 0 ms 99th, 0 ms 99.9th.")


def test_steady_state_stats_announce_themselves_and_a_suppressed_one_is_silent():
    lines: list[str] = []
    warm = ProducerStats(10, 1000, 0, lines.append)
    warm.suppress_printing()
    steady = ProducerStats(8, 1000, 0, lines.append, steady_state=True)
    for stats in (warm, steady):
        stats.record(2, 10, 1500)
    assert lines == ["In steady state.",
                     "1 records sent, 0.7 records/sec (0.00 MB/sec), 2.0 ms avg latency, "
                     "2.0 ms max latency."]
    assert steady.total_line(2000).startswith("1 steady state records sent, 0.500000 ")
    assert warmup_line(2) == ("Warmup first 2 records. Steady state results will print "
                              "after the complete test summary.")


def test_consumer_header_and_result_line():
    assert consumer_header(False) == (
        "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, "
        "nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
    assert consumer_header(True).startswith("time, threadId, data.consumed.in.MB, ")
    assert consumer_total_line("S", "E", 0, 2000, 1000, 2 * MIB, 500) == (
        "S, E, 2.0000, 1.0000, 1000, 500.0000, 500, 1500, 1.3333, 666.6667")


def test_consumer_progress_line_rates_are_the_intervals():
    assert consumer_progress_line("T", 2 * MIB, MIB, 200, 100, 0, 1000, 0) == (
        "T, 0, 2.0000, 1.0000, 200, 100.0000, 0, 1000, 1.0000, 100.0000")
    # All of the interval spent joining: no fetch rate, not a division by zero.
    assert consumer_progress_line("T", MIB, 0, 5, 0, 0, 1000, 1000).endswith(
        ", 1000, 0, 0.0000, 0.0000")


def test_timeout_warning_is_kafkas():
    assert timeout_warning(10000) == (
        "WARNING: Exiting before consuming the expected number of records: timeout "
        "(10000 ms) exceeded. You can use the --timeout option to increase the timeout.")


UTC = datetime.UTC
MOMENT = 1_700_000_000_123  # 2023-11-14T22:13:20.123Z, a Tuesday


@pytest.mark.parametrize(("pattern", "text"), [
    (DEFAULT_DATE_FORMAT, "2023-11-14 22:13:20:123"),
    ("yy/MMM/d h:mm a 'at' EEE Z", "23/Nov/14 10:13 PM at Tue +0000"),
    ("EEEE, MMMM dd ''yy", "Tuesday, November 14 '23"),
    ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2023-11-14T22:13:20.123Z"),
])
def test_simple_date_format(pattern, text):
    assert format_date(pattern, MOMENT, UTC) == text


def test_date_format_in_another_zone():
    zone = datetime.timezone(datetime.timedelta(hours=-5, minutes=-30))
    assert format_date("HH:mm Z", MOMENT, zone) == "16:43 -0530"


def test_a_letter_simple_date_format_refuses_is_refused():
    with pytest.raises(DateFormatError, match="Illegal pattern character 'q'"):
        check_date_format("yyyy-qq")
    with pytest.raises(DateFormatError, match="Unterminated quote"):
        check_date_format("yyyy 'at")
