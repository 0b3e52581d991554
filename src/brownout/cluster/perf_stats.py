"""What `brownout producer-perf-test` and `consumer-perf-test` print, in the format of
Apache Kafka 4.x's kafka-producer-perf-test and kafka-consumer-perf-test, pure: the
producer's latency statistics (windows, the total with percentiles, Kafka's sampling),
the consumer's header and result lines, and the Java formatting they need (`%.2f` rounds
half up from the shortest decimal, as java.util.Formatter does; NaN and Infinity print
as Java prints them; the time fields as java.text.SimpleDateFormat formats them).

Times are milliseconds passed in by the caller, so the statistics can be driven by
hand-made inputs.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_UP, Decimal

MIB = 1024 * 1024
# Kafka keeps at most this many latency samples, taking every Nth record's.
MAX_LATENCY_SAMPLES = 500_000
PERCENTILES = (0.5, 0.95, 0.99, 0.999)
DEFAULT_REPORTING_INTERVAL_MS = 5000


def java_div(a: float, b: float) -> float:
    """Java's double division: x/0 is +-Infinity, 0/0 NaN."""
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def java_fixed(value: float, digits: int) -> str:
    """`String.format("%.<digits>f", value)`: HALF_UP from the shortest decimal that
    reads back as `value` (so 0.125 -> 0.13 and 1.005 -> 1.01, where Python's
    round-half-even on the binary value gives 0.12 and 1.00)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    exact = Decimal(repr(value)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return f"{exact:f}"


def sampling_interval(num_records: int) -> int:
    """Kafka samples every Nth latency so at most MAX_LATENCY_SAMPLES are kept."""
    return num_records // min(num_records, MAX_LATENCY_SAMPLES)


def percentiles(samples: Sequence[int], wanted: Sequence[float] = PERCENTILES) -> list[int]:
    """Kafka's percentiles: the sorted samples' element at `int(p * n)` (no
    interpolation); 0 for every percentile when there is no sample, as Kafka's array
    of zeros gives."""
    ordered = sorted(samples)
    if not ordered:
        return [0 for _ in wanted]
    return [ordered[int(p * len(ordered))] for p in wanted]


@dataclasses.dataclass
class _Window:
    start_ms: int
    count: int = 0
    bytes: int = 0
    total_latency: int = 0
    max_latency: int = 0

    def add(self, latency: int, size: int) -> None:
        self.count += 1
        self.bytes += size
        self.total_latency += latency
        self.max_latency = max(self.max_latency, latency)


class ProducerStats:
    """Kafka's producer Stats: every acknowledged record's latency (ms) and size; a line
    per reporting interval (the first record acknowledged after it ended prints it) and
    one for the whole run. `steady_state` is the second Stats Kafka keeps after
    --warmup-records; `print_line` receives each line."""

    def __init__(self, num_records: int, reporting_interval_ms: int, start_ms: int,
                 print_line: Callable[[str], None], steady_state: bool = False) -> None:
        self.start_ms = start_ms
        self.sampling = sampling_interval(num_records)
        self.capacity = num_records // self.sampling + 1
        self.samples: list[int] = []
        self.iteration = 0
        self.reporting_interval_ms = reporting_interval_ms
        self.total = _Window(start_ms)
        self.window = _Window(start_ms)
        self.steady_state = steady_state
        self.suppressed = False
        self.print_line = print_line

    def record(self, latency: int, size: int, now_ms: int) -> None:
        self.total.add(latency, size)
        self.window.add(latency, size)
        if self.iteration % self.sampling == 0 and len(self.samples) < self.capacity:
            self.samples.append(latency)
        if now_ms - self.window.start_ms >= self.reporting_interval_ms:
            if self.steady_state and self.total.count == self.window.count:
                self.print_line("In steady state.")
            if not self.suppressed:
                self.print_line(window_line(self.window, now_ms))
            self.window = _Window(now_ms)
        self.iteration += 1

    def suppress_printing(self) -> None:
        self.suppressed = True

    def total_line(self, now_ms: int) -> str:
        return total_line(self.total, now_ms, percentiles(self.samples), self.steady_state)


def _rates(count: int, size: int, elapsed_ms: int) -> tuple[float, float]:
    records_per_sec = java_div(1000.0 * count, float(elapsed_ms))
    mb_per_sec = java_div(java_div(1000.0 * size, float(elapsed_ms)), float(MIB))
    return records_per_sec, mb_per_sec


def window_line(window: _Window, now_ms: int) -> str:
    """Kafka's progress line, e.g. `5000 records sent, 999.8 records/sec (0.10 MB/sec),
    1.2 ms avg latency, 7.0 ms max latency.`"""
    rate, mb = _rates(window.count, window.bytes, now_ms - window.start_ms)
    avg = java_div(float(window.total_latency), float(window.count))
    return (f"{window.count} records sent, {java_fixed(rate, 1)} records/sec "
            f"({java_fixed(mb, 2)} MB/sec), {java_fixed(avg, 1)} ms avg latency, "
            f"{java_fixed(float(window.max_latency), 1)} ms max latency.")


def total_line(total: _Window, now_ms: int, percs: Sequence[int],
               steady_state: bool = False) -> str:
    """Kafka 4.x's summary: the rate with `%f` (six decimals), then the latency
    average, maximum and the 50th, 95th, 99th and 99.9th percentiles."""
    rate, mb = _rates(total.count, total.bytes, now_ms - total.start_ms)
    avg = java_div(float(total.total_latency), float(total.count))
    p50, p95, p99, p999 = percs
    return (f"{total.count}{' steady state' if steady_state else ''} records sent, "
            f"{java_fixed(rate, 6)} records/sec ({java_fixed(mb, 2)} MB/sec), "
            f"{java_fixed(avg, 2)} ms avg latency, "
            f"{java_fixed(float(total.max_latency), 2)} ms max latency, {p50} ms 50th, "
            f"{p95} ms 95th, {p99} ms 99th, {p999} ms 99.9th.")


def warmup_line(warmup_records: int) -> str:
    return (f"Warmup first {warmup_records} records. Steady state results will print "
            "after the complete test summary.")


# The consumer's.

_NEW_FIELDS = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"


def consumer_header(show_detailed_stats: bool) -> str:
    first = ("time, threadId" if show_detailed_stats else "start.time, end.time")
    return (f"{first}, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec"
            f"{_NEW_FIELDS}")


def consumer_total_line(start: str, end: str, start_ms: int, end_ms: int, records: int,
                        size: int, join_ms: int) -> str:
    """The result line: start and end (already formatted), MB read, MB/s, records,
    records/s over the whole run, then the time spent joining the group, the rest
    (fetch time) and the rates over the fetch time."""
    elapsed_sec = (end_ms - start_ms) / 1000.0
    fetch_ms = (end_ms - start_ms) - join_ms
    mb = size / MIB
    return ", ".join([
        start, end, java_fixed(mb, 4), java_fixed(java_div(mb, elapsed_sec), 4),
        str(records), java_fixed(java_div(float(records), elapsed_sec), 4), str(join_ms),
        str(fetch_ms), java_fixed(java_div(mb, fetch_ms / 1000.0), 4),
        java_fixed(java_div(float(records), fetch_ms / 1000.0), 4)])


def consumer_progress_line(time: str, size: int, last_size: int, records: int,
                           last_records: int, start_ms: int, end_ms: int,
                           join_ms: int) -> str:
    """A --show-detailed-stats line for the interval from start_ms to end_ms: the end
    time, thread id 0, the MB read so far, the interval's MB/s, the records so far, the
    interval's records/s, then the interval's join time, fetch time and the rates over
    it (0 when the fetch time is not positive)."""
    elapsed_ms = float(end_ms - start_ms)
    interval_mb = (size - last_size) / MIB
    basic = [time, "0", java_fixed(size / MIB, 4),
             java_fixed(java_div(1000.0 * interval_mb, elapsed_ms), 4), str(records),
             java_fixed(java_div(float(records - last_records), elapsed_ms) * 1000.0, 4)]
    fetch_ms = end_ms - start_ms - join_ms
    mb_rate = 0.0 if fetch_ms <= 0 else 1000.0 * interval_mb / fetch_ms
    rate = 0.0 if fetch_ms <= 0 else 1000.0 * (records - last_records) / fetch_ms
    return ", ".join([*basic, str(join_ms), str(fetch_ms), java_fixed(mb_rate, 4),
                      java_fixed(rate, 4)])


def timeout_warning(timeout_ms: int) -> str:
    return (f"WARNING: Exiting before consuming the expected number of records: timeout "
            f"({timeout_ms} ms) exceeded. You can use the --timeout option to increase "
            "the timeout.")


# java.text.SimpleDateFormat, the letters a date format is likely to use.

DEFAULT_DATE_FORMAT = "yyyy-MM-dd HH:mm:ss:SSS"
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


class DateFormatError(ValueError):
    """A pattern SimpleDateFormat refuses, or one with a letter this one does not do."""


def _tokens(pattern: str) -> list[tuple[str, int] | str]:
    """The pattern as (letter, count) runs and literal text ('' quotes text; '' alone
    is a quote)."""
    out: list[tuple[str, int] | str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            end = pattern.find("'", i + 1)
            if end == i + 1:
                out.append("'")
                i += 2
                continue
            if end < 0:
                raise DateFormatError(f"Unterminated quote in date format {pattern!r}")
            out.append(pattern[i + 1:end].replace("''", "'"))
            i = end + 1
            continue
        if c.isascii() and c.isalpha():
            j = i
            while j < len(pattern) and pattern[j] == c:
                j += 1
            out.append((c, j - i))
            i = j
            continue
        out.append(c)
        i += 1
    return out


def _offset(moment: datetime.datetime, iso: bool, count: int) -> str:
    delta = moment.utcoffset() or datetime.timedelta(0)
    minutes = int(delta.total_seconds()) // 60
    if iso and minutes == 0:
        return "Z"
    sign = "-" if minutes < 0 else "+"
    hours, mins = divmod(abs(minutes), 60)
    if iso:
        return (f"{sign}{hours:02d}" if count == 1 else
                f"{sign}{hours:02d}{mins:02d}" if count == 2 else
                f"{sign}{hours:02d}:{mins:02d}")
    return f"{sign}{hours:02d}{mins:02d}"


def _field(letter: str, count: int, moment: datetime.datetime) -> str:
    def num(value: int) -> str:
        return str(value).zfill(count)

    hour12 = moment.hour % 12 or 12
    simple: dict[str, Callable[[], str]] = {
        "d": lambda: num(moment.day),
        "H": lambda: num(moment.hour),
        "k": lambda: num(moment.hour or 24),
        "K": lambda: num(moment.hour % 12),
        "h": lambda: num(hour12),
        "m": lambda: num(moment.minute),
        "s": lambda: num(moment.second),
        "S": lambda: num(moment.microsecond // 1000),
        "D": lambda: num(moment.timetuple().tm_yday),
        "a": lambda: "AM" if moment.hour < 12 else "PM",
        "u": lambda: num(moment.isoweekday()),
        "Z": lambda: _offset(moment, False, count),
        "X": lambda: _offset(moment, True, count),
        "z": lambda: moment.tzname() or _offset(moment, False, count),
        "G": lambda: "AD",
    }
    if letter in ("y", "Y"):
        year = moment.isocalendar()[0] if letter == "Y" else moment.year
        return str(year % 100).zfill(2) if count == 2 else num(year)
    if letter == "M":
        if count >= 4:
            return _MONTHS[moment.month - 1]
        return _MONTHS[moment.month - 1][:3] if count == 3 else num(moment.month)
    if letter == "E":
        day = _DAYS[moment.weekday()]
        return day if count >= 4 else day[:3]
    if letter not in simple:
        raise DateFormatError(f"Illegal pattern character '{letter}'")
    return simple[letter]()


def check_date_format(pattern: str) -> None:
    """Raise DateFormatError now for a pattern `format_date` cannot format."""
    format_date(pattern, 0, datetime.UTC)


def format_date(pattern: str, epoch_ms: int, tz: datetime.tzinfo) -> str:
    """`new SimpleDateFormat(pattern).format(epoch_ms)` in time zone `tz`."""
    moment = datetime.datetime.fromtimestamp(epoch_ms / 1000, tz)
    moment = moment.replace(microsecond=(epoch_ms % 1000) * 1000)
    return "".join(t if isinstance(t, str) else _field(t[0], t[1], moment)
                   for t in _tokens(pattern))
