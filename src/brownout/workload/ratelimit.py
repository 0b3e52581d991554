"""A token bucket for steady send rates.

Implemented as GCRA (the "virtual scheduling" form of a token bucket): one number, the
theoretical arrival time of the next token, instead of a token count refilled by a
timer. The long-run rate is exactly `rate` however unevenly `take` is called, and after
an idle spell at most `burst` sends go out back to back — a producer that stalled for a
second (a broker failed over) does not then fire a second's worth of messages at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class TokenBucket:
    def __init__(self, rate: float, burst: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.interval = 1.0 / rate
        # Default burst: 20 ms worth of tokens, at least 4, so that oversleeping by a
        # millisecond or two (poll timeouts are not precise) is made up, not lost.
        self.burst = max(1.0, burst) if burst is not None else max(4.0, rate * 0.02)
        self._tolerance = (self.burst - 1.0) * self.interval
        self._clock = clock
        self._tat = clock()  # theoretical arrival time of the next conforming send

    def take(self) -> float:
        """Take one token if one is available and return 0.0; otherwise take nothing and
        return how many seconds to wait before asking again."""
        now = self._clock()
        tat = self._tat if self._tat > now else now
        wait = tat - self._tolerance - now
        if wait > 1e-9:  # not 0: float rounding must not eat a token of the burst
            return wait
        self._tat = tat + self.interval
        return 0.0


def wait_serving(poll: Callable[[float], object], seconds: float) -> None:
    """Wait `seconds` while serving a librdkafka client's callbacks.

    librdkafka takes poll()'s timeout in whole milliseconds (confluent-kafka truncates),
    so a wait under 1 ms given to poll() returns at once and a pacing loop built on it
    spins a core at high rates, taking the CPU the lab's nodes need. Whole milliseconds
    are waited in poll() (callbacks run meanwhile, GIL released); the rest in a sleep.
    poll() runs even for a sub-millisecond wait (then with 0): at 10 000 sends/s no wait
    is a whole millisecond, and delivery callbacks would wait for the final flush.
    """
    whole_ms = int(seconds * 1000) / 1000
    poll(whole_ms)
    rest = seconds - whole_ms
    if rest > 0:
        time.sleep(rest)
