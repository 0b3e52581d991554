"""How late the node's event loop runs, and the stalls that say the lab, not Kafka, is slow.

Everything a node does runs on one asyncio loop. When that loop is blocked (a long
synchronous step, a machine with too few cores for the lab, a SIGSTOP) nothing else runs:
heartbeats, Raft fetches and replica fetches all wait, and the cluster reacts as if the
node had failed. Kafka's JVM brokers have threads and do not stall like this, so a run
in which our own node stalled measures Python's limits, not Kafka's behaviour.

The monitor sleeps for a short interval and measures how late it woke (the lag). A lag
above `event.loop.stall.threshold.ms` is a stall: it becomes a `stall` event in the
node's event stream (its format: common/stalls.py, which the lab reads it with) and a
WARN line in its log. `StallTracker` is the pure part (what is
a stall, the worst recent one); `run_loop_monitor` is the task around it.

A stall's length alone does not say what to fix. `StallSampler` is a thread that looks at
the loop's thread whenever the monitor has not woken for longer than the threshold and
records its Python stack; the stall event then names where the loop was (the stacks seen
most often while it was stuck), so a stall in a lab run is its own profile. The thread
can only look when the loop thread lets go of the interpreter, so the stacks lean towards
system calls (a socket send, a file write) even when the loop was busy in Python code
around them. What settles "busy or starved" is how the loop thread spent the stall: on
Linux the monitor reads the thread's scheduler statistics, and the stall carries how long
the thread ran on a CPU (`ran_ms`) and how long it was ready to run but waited for a CPU
(`runqueue_ms`). A long stall that is mostly runqueue wait is the machine's load, not the
node's work.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType

from ..common.stalls import RECENT_WINDOW_S, Stall, worst_stall

log = logging.getLogger("kafka.server.EventLoopMonitor")


class StallTracker:
    """Decides which lags are stalls and remembers the worst recent one.

    Pure: the caller passes the measured lag and the time; nothing here reads a clock.
    Only stalls are kept, and only those within `window_s` of the newest, so memory stays
    bounded however long the node runs.
    """

    def __init__(self, threshold_ms: float, window_s: float = RECENT_WINDOW_S) -> None:
        self.threshold_ms = threshold_ms
        self.window_s = window_s
        self._recent: list[Stall] = []

    def observe(self, lag_ms: float, at: float) -> Stall | None:
        """The stall when `lag_ms` exceeds the threshold, else None."""
        if lag_ms <= self.threshold_ms:
            return None
        stall = Stall(at, lag_ms)
        self._recent = [s for s in self._recent if s.at >= at - self.window_s]
        self._recent.append(stall)
        return stall

    def worst(self, now: float) -> Stall | None:
        """The longest stall that ended within the window before `now`."""
        return worst_stall(self._recent, since=now - self.window_s)


@dataclasses.dataclass(frozen=True, slots=True)
class CpuTimes:
    """A thread's cumulative time on a CPU and waiting for one (ms), as Linux counts them
    in /proc/<pid>/task/<tid>/schedstat."""

    ran_ms: float
    runqueue_ms: float

    @classmethod
    def parse(cls, text: str) -> CpuTimes:
        """From schedstat's text: ns on a CPU, ns waiting on a runqueue, timeslices."""
        ran_ns, waited_ns, *_ = text.split()
        return cls(int(ran_ns) / 1e6, int(waited_ns) / 1e6)

    def since(self, earlier: CpuTimes) -> CpuTimes:
        return CpuTimes(self.ran_ms - earlier.ran_ms, self.runqueue_ms - earlier.runqueue_ms)


def thread_cpu_times() -> CpuTimes | None:
    """The calling thread's CpuTimes; None where the kernel does not provide them."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return CpuTimes.parse(f.read())
    except (OSError, ValueError):
        return None


def log_stall(
    node_id: int, stall: Stall, tracker: StallTracker, stacks: Sequence[tuple[str, int]] = (),
) -> None:
    worst = tracker.worst(stall.at) or stall
    split = "" if stall.ran_ms is None or stall.runqueue_ms is None else (
        f" (its thread ran {stall.ran_ms:.0f} ms on a CPU and waited "
        f"{stall.runqueue_ms:.0f} ms for one; the rest it slept, blocked or was stopped)")
    log.warning(
        "[EventLoopMonitor nodeId=%d] The event loop stalled for %d ms (above "
        "event.loop.stall.threshold.ms=%d)%s: no request, heartbeat or fetch ran "
        "meanwhile; the worst in the last %d s was %d ms",
        node_id, stall.lag_ms, tracker.threshold_ms, split, tracker.window_s, worst.lag_ms)
    for stack, count in stacks:
        log.info("[EventLoopMonitor nodeId=%d] stalled in (%d samples): %s",
                 node_id, count, stack)


# Frames kept per sampled stack (innermost last): enough to see the handler that called
# the slow step, short enough for one event line.
STACK_DEPTH = 12
# Distinct stacks a stall event names, most frequent first.
STACKS_PER_STALL = 3


def format_stack(frame: FrameType | None, depth: int = STACK_DEPTH) -> str:
    """`module.function:line` of the innermost `depth` frames, outermost first, joined
    by ' > ' (one line, so an event or a log line can hold it)."""
    parts: list[str] = []
    while frame is not None and len(parts) < depth:
        code = frame.f_code
        module = frame.f_globals.get("__name__", "?")
        parts.append(f"{module}.{code.co_name}:{frame.f_lineno}")
        frame = frame.f_back
    return " > ".join(reversed(parts))


class StallSampler:
    """Samples the loop thread's stack while the loop is stuck.

    The loop monitor calls `beat()` each time it wakes. A daemon thread wakes every
    `interval_s`; when the last beat is older than the monitor's own interval plus the
    threshold, the loop is stalled right now and the thread records the loop thread's
    current stack. `take()` hands over (and forgets) what was seen since the last call.
    A thread can look while the loop is stuck because the loop either waits in a system
    call (which releases the GIL) or runs Python code (which yields the GIL every few
    milliseconds).
    """

    def __init__(self, loop_thread_id: int, stalled_after_s: float, interval_s: float) -> None:
        self._loop_thread_id = loop_thread_id
        self._stalled_after_s = stalled_after_s
        self._interval_s = interval_s
        self._last_beat = time.monotonic()
        self._stacks: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="stall-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def beat(self) -> None:
        self._last_beat = time.monotonic()

    def take(self, most_common: int = STACKS_PER_STALL) -> list[tuple[str, int]]:
        with self._lock:
            stacks = self._stacks.most_common(most_common)
            self._stacks.clear()
        return stacks

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            if time.monotonic() - self._last_beat <= self._stalled_after_s:
                continue
            frame = sys._current_frames().get(self._loop_thread_id)
            stack = format_stack(frame)
            del frame  # a frame reference would keep the loop's locals alive
            with self._lock:
                self._stacks[stack] += 1


async def run_loop_monitor(
    tracker: StallTracker,
    interval_s: float,
    on_stall: Callable[[Stall, list[tuple[str, int]]], None],
    *,
    clock: Callable[[], float] = time.time,
    sample: bool = True,
    cpu_times: Callable[[], CpuTimes | None] = thread_cpu_times,
) -> None:
    """Sleep `interval_s`, measure how late the loop woke, report stalls; until cancelled.

    The lag is measured on the loop's own monotonic clock (a wall-clock step is not a
    stall); the stall is stamped with `clock` so it lines up with the other events.
    `on_stall` gets the stall and, with `sample`, the loop's stacks seen meanwhile.
    `cpu_times` reads the loop thread's CpuTimes (this task runs on that thread).
    """
    loop = asyncio.get_running_loop()
    sampler = None
    if sample:
        stalled_after_s = interval_s + tracker.threshold_ms / 1000.0
        sampler = StallSampler(threading.get_ident(), stalled_after_s, interval_s)
        sampler.start()
    try:
        before = cpu_times()
        while True:
            due = loop.time() + interval_s
            await asyncio.sleep(interval_s)
            lag_ms = max(0.0, (loop.time() - due) * 1000.0)
            if sampler is not None:
                sampler.beat()
            after = cpu_times()
            stall = tracker.observe(lag_ms, clock())
            stacks = sampler.take() if sampler is not None else []
            if stall is not None:
                if before is not None and after is not None:
                    spent = after.since(before)
                    stall = dataclasses.replace(
                        stall, ran_ms=spent.ran_ms, runqueue_ms=spent.runqueue_ms)
                on_stall(stall, stacks)
            before = after
    finally:
        if sampler is not None:
            sampler.stop()
