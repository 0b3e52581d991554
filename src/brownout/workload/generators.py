"""Deterministic message streams: clicks, payments, logs.

Each stream is an iterator of `Message`s driven by one seeded `random.Random`, so the
same (seed, run id, producer, start time) gives byte-identical messages. Event time is
simulated (a start in ms plus random gaps), never read from a clock, for the same reason.

Every message carries the three headers the checkers rely on:

    msg-id     f"{run}-{producer}-{seq}", unique across the run
    producer   the producer's process name ("producer-0", ...)
    seq        the producer's own sequence number, from 0, as ASCII digits

Values are JSON objects (always valid JSON: built with json.dumps). Generators are
cheap on purpose — a few microseconds per message — so a producer thread can drive tens
of thousands of messages a second; `size` pads a value to a target length with a "pad"
field, for throughput runs with realistic record sizes.
"""

from __future__ import annotations

import bisect
import json
import math
import random
import re
import string
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

WORKLOADS = ("clicks", "payments", "logs")
DEFAULT_START_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z: deterministic by default

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True).encode


class Message(NamedTuple):
    """One record to produce (a NamedTuple: cheap to build on the hot path)."""

    key: bytes
    value: bytes
    headers: list[tuple[str, bytes]]
    event_time: int  # ms since the epoch (simulated)
    msg_id: str
    producer: str
    seq: int


class _Stream:
    """Shared plumbing: headers, sequence numbers, simulated clock, padding."""

    def __init__(self, *, seed: int, run: str, producer: str, start_ms: int, rate: float,
                 size: int) -> None:
        # Seeding with a string is deterministic across processes (SHA-512 of the text),
        # and gives each producer of one run its own independent stream.
        self.rng = random.Random(f"{seed}/{producer}")
        self.run = run
        self.producer = producer
        self._producer_header = producer.encode()
        self.seq = 0
        self.now_ms = float(start_ms)
        self._mean_gap_ms = 1000.0 / rate if rate > 0 else 1.0
        self.size = size

    def __iter__(self) -> Iterator[Message]:
        return self

    def __next__(self) -> Message:
        # Exponential gaps: a Poisson arrival process at the nominal rate.
        self.now_ms += self.rng.expovariate(1.0) * self._mean_gap_ms
        ts = int(self.now_ms)
        key, body = self.next_event(ts)
        seq = self.seq
        self.seq += 1
        msg_id = f"{self.run}-{self.producer}-{seq}"
        body["msg_id"] = msg_id
        value = _dumps(body).encode()
        if self.size > len(value) + 9:
            # Pad inside the JSON object (before its closing brace) so the value stays
            # valid JSON: replacing } by ,"pad":"xxx"} adds 9 bytes plus the x's.
            value = value[:-1] + b',"pad":"' + b"x" * (self.size - len(value) - 9) + b'"}'

        headers = [
            ("msg-id", msg_id.encode()),
            ("producer", self._producer_header),
            ("seq", str(seq).encode()),
        ]
        return Message(key.encode(), value, headers, ts, msg_id, self.producer, seq)

    def next_event(self, ts: int) -> tuple[str, dict[str, Any]]:  # pragma: no cover
        raise NotImplementedError


def read_identity(
    headers: Sequence[tuple[str, bytes | None]] | None,
) -> tuple[str | None, str | None, int | None]:
    """(msg_id, producer, seq) from a record's headers, as Stream writes them; None for
    what is missing (records from other writers)."""
    msg_id = producer = None
    seq = None
    for k, v in headers or ():
        if v is None:
            continue
        if k == "msg-id":
            msg_id = v.decode("utf-8", "replace")
        elif k == "producer":
            producer = v.decode("utf-8", "replace")
        elif k == "seq" and v.isdigit():
            seq = int(v)
    return msg_id, producer, seq


# Kafka's VerifiableProducer (client: java) writes no headers: its values are "P.N", its
# --value-prefix P and its own sequence number N. The lab gives each Java producer the
# prefix TAG * JAVA_PRODUCER_SLOTS + i, where TAG is a hash of the run id and i the index
# of its name "producer-<i>", so a value names its run and producer and becomes the same
# msg_id as a generated record's: f"{run}-producer-<i>-{N}". Values of another run (another
# TAG) are another writer's. P stays below Java's Integer.MAX_VALUE (2**31 - 1).
JAVA_PRODUCER_SLOTS = 1000
JAVA_RUN_TAGS = 2_000_000
_JAVA_VALUE = re.compile(r"(\d{1,10})\.(\d{1,19})")
_PRODUCER_NAME = re.compile(r"producer-(\d{1,3})")


def java_run_tag(run: str) -> int:
    return zlib.crc32(run.encode()) % JAVA_RUN_TAGS


def java_value_prefix(run: str, producer: str) -> int:
    """The --value-prefix of the lab's producer `producer` ("producer-<i>") in run `run`."""
    match = _PRODUCER_NAME.fullmatch(producer)
    if match is None:
        raise ValueError(f"a Java producer's name must be producer-<i> with i below "
                         f"{JAVA_PRODUCER_SLOTS}, not {producer!r}")
    return java_run_tag(run) * JAVA_PRODUCER_SLOTS + int(match.group(1))


def value_identity(value: bytes | str | None, run: str | None
                   ) -> tuple[str | None, str | None, int | None]:
    """(msg_id, producer, seq) from a record's value, for readers that see no headers
    (Kafka's VerifiableConsumer) or records that have none (Kafka's VerifiableProducer):
    a generated JSON value's "msg_id" field, or a VerifiableProducer value "P.N" whose
    prefix P is run `run`'s (see JAVA_PRODUCER_SLOTS); (None, None, None) otherwise."""
    if value is None:
        return None, None, None
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    match = _JAVA_VALUE.fullmatch(text)
    if match is not None:
        if run is None:
            return None, None, None
        tag, index = divmod(int(match.group(1)), JAVA_PRODUCER_SLOTS)
        if tag != java_run_tag(run):
            return None, None, None
        producer, seq = f"producer-{index}", int(match.group(2))
        return f"{run}-{producer}-{seq}", producer, seq
    if text.startswith("{") and '"msg_id"' in text:
        try:
            msg_id = json.loads(text).get("msg_id")
        except (ValueError, AttributeError):
            return None, None, None
        return msg_id_parts(msg_id) if isinstance(msg_id, str) else (None, None, None)
    return None, None, None


def msg_id_parts(msg_id: str) -> tuple[str, str | None, int | None]:
    """(msg_id, producer, seq) of a msg_id f"{run}-{producer}-{seq}" (run ids have no
    dash, producer names may)."""
    _run, _, rest = msg_id.partition("-")
    producer, _, seq = rest.rpartition("-")
    if not producer or not seq.isdigit():
        return msg_id, None, None
    return msg_id, producer, int(seq)


def record_identity(headers: Sequence[tuple[str, bytes | None]] | None,
                    value: bytes | str | None, run: str | None
                    ) -> tuple[str | None, str | None, int | None]:
    """The headers' identity (read_identity); without a msg-id header, the value's."""
    found = read_identity(headers)
    if found[0] is not None:
        return found
    return value_identity(value, run)


def _pick(rnd: Callable[[], float], seq: Sequence[Any]) -> Any:
    """rng.choice without its rejection sampling (a few times faster; the bias of
    int(random() * n) is below 2**-40 for the small n used here)."""
    return seq[int(rnd() * len(seq))]


def _zipf_pick(rnd: Callable[[], float], cum: list[float]) -> int:
    return bisect.bisect(cum, rnd() * cum[-1])


def _zipf_weights(n: int, s: float) -> list[float]:
    """Cumulative weights of a Zipf law: a few very active keys, a long tail."""
    total, cum = 0.0, []
    for rank in range(1, n + 1):
        total += 1.0 / rank**s
        cum.append(total)
    return cum


# -- clicks ----------------------------------------------------------------------------

_PAGES = ["/", "/search", "/category/shoes", "/category/books", "/category/garden",
          "/product", "/product", "/product", "/cart", "/checkout", "/account", "/help"]
_LANDING = _PAGES[:6]
_NEXT_PAGE = {  # a crude funnel: where people go from each page
    "/": ["/search", "/category/shoes", "/category/books", "/category/garden", "/account"],
    "/search": ["/product", "/product", "/search", "/"],
    "/category/shoes": ["/product", "/product", "/search"],
    "/category/books": ["/product", "/product", "/search"],
    "/category/garden": ["/product", "/product", "/search"],
    "/product": ["/product", "/cart", "/search", "/"],
    "/cart": ["/checkout", "/product", "/"],
    "/checkout": ["/", "/account"],
    "/account": ["/", "/help"],
    "/help": ["/", "/account"],
}
_EXTERNAL = ["direct", "direct", "https://www.google.com/", "https://www.google.com/",
             "https://www.bing.com/", "https://t.co/", "https://news.ycombinator.com/",
             "email"]
_DEVICES = ["mobile", "mobile", "mobile", "desktop", "desktop", "tablet"]


class ClickStream(_Stream):
    """Page views keyed by user (Zipf-distributed activity). A session starts with an
    external referrer, continues through a funnel (referrer = previous page) and ends
    after a geometric number of views; a few hundred sessions are open at once, so
    sessions of different users interleave as they do in real traffic."""

    def __init__(self, *, users: int = 10_000, **kw: Any) -> None:
        super().__init__(**kw)
        self.users = users
        self._cum = _zipf_weights(users, 1.1)
        self._sessions: dict[int, list[Any]] = {}  # user -> [session id, page, views left]
        self._open: list[int] = []  # users with an open session, for O(1) sampling
        self._session_seq = 0

    def next_event(self, ts: int) -> tuple[str, dict[str, Any]]:
        rnd = self.rng.random
        if self._open and (len(self._open) > 300 or rnd() < 0.8):
            user = _pick(rnd, self._open)
            session = self._sessions[user]
            referrer = session[1]
            funnel = "/product" if referrer.startswith("/product/") else referrer
            page = _pick(rnd, _NEXT_PAGE.get(funnel, _PAGES))
            event = "page_view"
        else:
            user = _zipf_pick(rnd, self._cum)
            session = self._sessions.get(user)
            if session is not None:  # the user went back to the home page
                referrer, page, event = session[1], "/", "page_view"
            else:
                self._session_seq += 1
                views = 1 + int(self.rng.expovariate(1 / 6.0))
                session = [f"s-{self.producer}-{self._session_seq}", "", views]
                self._sessions[user] = session
                self._open.append(user)
                referrer, page = _pick(rnd, _EXTERNAL), _pick(rnd, _LANDING)
                event = "session_start"
        if page == "/product":
            page = f"/product/{int(rnd() * 5000)}"
        session[1] = page
        session[2] -= 1
        if session[2] <= 0:
            del self._sessions[user]
            self._open.remove(user)  # short list (<= ~300)
            event = "session_end" if event == "page_view" else "bounce"
        uid = f"u{user}"
        return uid, {
            "type": "click", "event": event, "user_id": uid, "session_id": session[0],
            "page": page, "referrer": referrer, "device": _DEVICES[user % len(_DEVICES)],
            "ts": ts,
        }


# -- payments --------------------------------------------------------------------------

_CURRENCIES = ["EUR", "EUR", "USD", "USD", "USD", "GBP", "CHF", "JPY", "SEK"]
_MERCHANTS = [f"m{i:04d}" for i in range(500)]
_FAIL_REASONS = ["insufficient_funds", "card_declined", "expired_card", "fraud_suspected",
                 "issuer_unavailable"]


class PaymentStream(_Stream):
    """Payment lifecycle events keyed by account (Zipf-distributed): created →
    authorized → captured, failures at authorization or capture, and refunds of a few
    captured payments. A payment's later transitions come after its earlier ones, with
    the same key, so per-key order in the log can be checked against business order."""

    def __init__(self, *, accounts: int = 5_000, **kw: Any) -> None:
        super().__init__(**kw)
        self.accounts = accounts
        self._cum = _zipf_weights(accounts, 0.9)
        self._open: list[list[Any]] = []  # [payment id, account, merchant, amount, ccy, status]
        self._payment_seq = 0

    def next_event(self, ts: int) -> tuple[str, dict[str, Any]]:
        rnd = self.rng.random
        if not self._open or (len(self._open) < 500 and rnd() < 0.45):
            return self._create(ts)
        i = int(rnd() * len(self._open))
        p = self._open[i]
        previous = p[5]
        r = rnd()
        reason = None
        if previous == "created":
            status = "authorized" if r < 0.9 else "failed"
        elif previous == "authorized":
            status = "captured" if r < 0.96 else "failed"
        else:
            status = "refunded"  # only captured payments stay open, to be refunded
        if status == "failed":
            reason = _pick(rnd, _FAIL_REASONS)
        # Terminal states leave the open list (swap-remove is O(1)); most captured
        # payments are never refunded, so only a few stay open after capture.
        if status in ("failed", "refunded") or (status == "captured" and rnd() < 0.95):
            self._open[i] = self._open[-1]
            self._open.pop()
        p[5] = status
        return self._event(p, ts, previous, reason)

    def _create(self, ts: int) -> tuple[str, dict[str, Any]]:
        rng = self.rng
        self._payment_seq += 1
        account = _zipf_pick(rng.random, self._cum)
        amount = round(min(50_000.0, math.exp(rng.gauss(3.2, 1.1))), 2)
        p = [f"pay-{self.producer}-{self._payment_seq}", f"acct-{account}",
             _pick(rng.random, _MERCHANTS), amount, _CURRENCIES[account % len(_CURRENCIES)],
             "created"]
        self._open.append(p)
        return self._event(p, ts, None, None)

    @staticmethod
    def _event(p: list[Any], ts: int, previous: str | None,
               reason: str | None) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {
            "type": "payment", "payment_id": p[0], "account": p[1], "merchant": p[2],
            "amount": p[3], "currency": p[4], "status": p[5], "previous_status": previous,
            "ts": ts,
        }
        if reason:
            body["reason"] = reason
        return p[1], body


# -- logs ------------------------------------------------------------------------------

_SERVICES = {  # service -> (hosts, median latency ms)
    "api-gateway": (6, 12.0), "auth": (3, 8.0), "catalog": (4, 20.0), "cart": (3, 15.0),
    "checkout": (3, 45.0), "payments": (4, 80.0), "search": (5, 35.0),
    "recommendations": (4, 60.0), "inventory": (2, 25.0), "notifications": (2, 30.0),
}
_HOSTS = {name: [f"{name}-{i}" for i in range(n)] for name, (n, _) in _SERVICES.items()}
_LOG_MEDIAN = {name: math.log(median) for name, (_, median) in _SERVICES.items()}
_TEMPLATES = {
    "DEBUG": ["cache hit for {key}", "span {span} finished"],
    "INFO": ["GET {path} {status} in {ms}ms", "POST {path} {status} in {ms}ms",
             "request {req} completed", "connection pool size {n}"],
    "WARN": ["slow request {req}: {ms}ms", "retrying call to {dep} (attempt {n})",
             "connection pool nearly exhausted ({n} in use)"],
    "ERROR": ["call to {dep} failed: {err}", "timeout after {ms}ms calling {dep}",
              "unhandled exception in {path}: {err}"],
}
# Which fields each template uses, so only those random values are drawn.
_FIELDS = {t: tuple(f for _, f, _, _ in string.Formatter().parse(t) if f)
           for ts in _TEMPLATES.values() for t in ts}
_ERRORS = ["ConnectionResetError", "TimeoutError", "HTTP 503", "HTTP 500", "DeadlineExceeded"]
_PATHS = ["/v1/items", "/v1/cart", "/v1/checkout", "/v1/login", "/v1/search", "/healthz"]
_SERVICE_NAMES = list(_SERVICES)


class LogStream(_Stream):
    """Service logs keyed by service. Latency is log-normal with a Pareto tail; now and
    then a service enters an error burst (a few hundred lines with a high error rate and
    slow requests), the pattern an incident leaves in real logs."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._bursts: dict[str, int] = {}  # service -> lines left in its burst

    def next_event(self, ts: int) -> tuple[str, dict[str, Any]]:
        rng = self.rng
        rnd = rng.random
        service = _pick(rnd, _SERVICE_NAMES)
        burst = self._bursts.get(service, 0)
        if burst:
            self._bursts[service] = burst - 1
        elif rnd() < 0.0005:
            self._bursts[service] = 100 + int(rnd() * 500)
        latency = math.exp(_LOG_MEDIAN[service] + rng.gauss(0.0, 0.5))
        if rnd() < 0.01:
            latency *= rng.paretovariate(1.5)  # the tail
        if burst:
            latency *= 4
        r = rnd()
        if burst:
            level = "ERROR" if r < 0.4 else "WARN" if r < 0.7 else "INFO"
        else:
            level = ("ERROR" if r < 0.005 else "WARN" if r < 0.03 else
                     "DEBUG" if r < 0.15 else "INFO")
        template = _pick(rnd, _TEMPLATES[level])
        ms = round(latency, 1)
        values = {}
        for field in _FIELDS[template]:
            values[field] = self._field(field, rnd, level, ms)
        return service, {
            "type": "log", "service": service, "host": _pick(rnd, _HOSTS[service]),
            "level": level, "template": template, "message": template.format(**values),
            "latency_ms": ms, "ts": ts,
        }

    @staticmethod
    def _field(field: str, rnd: Callable[[], float], level: str, ms: float) -> Any:
        if field == "ms":
            return ms
        if field == "status":
            return 500 if level == "ERROR" else 200
        if field == "path":
            return _pick(rnd, _PATHS)
        if field == "dep":
            return _pick(rnd, _SERVICE_NAMES)
        if field == "err":
            return _pick(rnd, _ERRORS)
        if field == "n":
            return 1 + int(rnd() * 63)
        if field == "key":
            return f"k{int(rnd() * 1000)}"
        return f"{int(rnd() * 2**48):012x}"  # span, req: random hex ids


_STREAMS: dict[str, Callable[..., _Stream]] = {
    "clicks": ClickStream, "payments": PaymentStream, "logs": LogStream,
}


def make_stream(workload: str, *, seed: int, run: str, producer: str,
                start_ms: int = DEFAULT_START_MS, rate: float = 1000.0,
                size: int = 0) -> Iterator[Message]:
    """The stream for `workload` ("clicks" | "payments" | "logs")."""
    try:
        cls = _STREAMS[workload]
    except KeyError:
        raise ValueError(f"unknown workload {workload!r}; choose from {WORKLOADS}") from None
    return cls(seed=seed, run=run, producer=producer, start_ms=start_ms, rate=rate, size=size)
