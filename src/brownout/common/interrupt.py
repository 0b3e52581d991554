"""SIGINT and SIGTERM as one interrupt, and teardowns that no signal cuts short.

A lab command that starts processes (`brownout run`, `sweep`, `run --repeat`) runs inside
`interruptible()`: the first SIGINT (Ctrl-C) or SIGTERM raises `Interrupted` in the main
thread, wherever it is, so every `finally` and context manager on the way out stops what
was started. Every later signal is only reported: the command is already stopping, and a
second exception in the middle of its teardown would leave nodes, namespaces or a
pipeline behind. (SIGKILL stops it at once; `brownout clean` then removes what it left.)

A teardown runs inside `deferred()`: a first signal that arrives there is held until the
teardown is done, and `pending()` then hands it over, as if it had come a moment later.
Starting a process and recording its pid runs inside `atomic()`, which holds a first
signal the same way and raises it right after: an interrupt between the two would leave
a process that nothing knows of.

A signal that is ignored when `interruptible()` begins stays ignored: a process started
with SIGINT ignored (`nohup`, the children of `run --repeat --jobs`) asked for exactly
that.

An interrupted command exits with 128 + the signal's number, as a shell reports a
process that a signal ended: 130 for SIGINT, 143 for SIGTERM (`exit_status`).

The handler is the process's (signal handlers are): the state of the one installed
lives in this module while `interruptible()` runs, and `deferred`/`pending` find it
there; nested `interruptible()` calls leave the outer one in charge.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The command got SIGINT or SIGTERM (`signum`); a KeyboardInterrupt, so code that
    handles Ctrl-C handles both."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal_name(signum))
        self.signum = signum


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def signum_of(e: BaseException) -> int:
    """The signal behind an interrupt: a plain KeyboardInterrupt is Ctrl-C."""
    return int(getattr(e, "signum", signal.SIGINT))


def exit_status(e: BaseException) -> int:
    """128 + the signal: 130 for Ctrl-C, 143 for SIGTERM."""
    return 128 + signum_of(e)


def _to_stderr(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


@dataclasses.dataclass
class Interrupts:
    """What the installed handler has seen: the first signal (None: none yet), whether
    it was raised, and how deep the teardowns that hold it are."""

    note: Callable[[str], None] = _to_stderr
    signum: int | None = None
    raised: bool = False
    deferring: int = 0

    def handle(self, signum: int, frame: Any) -> None:
        name = signal_name(signum)
        if self.signum is not None:
            self.note(f"{name}: already stopping; the teardown under way (nodes, "
                      "namespaces, the pipeline) finishes first (SIGKILL stops at once, "
                      "then `brownout clean`)")
            return
        self.signum = signum
        if self.deferring:
            self.note(f"{name}: stopping as soon as the step under way is done")
            return
        self.raised = True
        self.note(f"{name}: stopping what was started and keeping what was recorded "
                  "(a second signal does not cut that short)")
        raise Interrupted(signum)


_installed: Interrupts | None = None


@contextlib.contextmanager
def interruptible(note: Callable[[str], None] | None = None) -> Iterator[Interrupts | None]:
    """Map SIGINT and SIGTERM to `Interrupted` (see the module docstring) for the body;
    yields the handler's state (None where another `interruptible()` is in charge, or
    off the main thread, where no handler can be installed)."""
    global _installed
    if _installed is not None or threading.current_thread() is not threading.main_thread():
        yield None
        return
    state = Interrupts(note or _to_stderr)
    previous = {}
    for s in SIGNALS:
        if signal.getsignal(s) is not signal.SIG_IGN:
            previous[s] = signal.signal(s, state.handle)
    _installed = state
    try:
        yield state
    finally:
        _installed = None
        for s, handler in previous.items():
            signal.signal(s, handler)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold a first signal until the body (a teardown) is done; `pending()` gives it.
    Only the main thread takes signals: elsewhere this does nothing."""
    state = _installed
    if state is None or not _main_thread():
        yield
        return
    state.deferring += 1
    try:
        yield
    finally:
        state.deferring -= 1


def pending() -> Interrupted | None:
    """The signal held by `deferred()` and not raised yet, as the exception to raise (it
    counts as raised from now on); None when there is none."""
    state = _installed
    if (state is None or state.signum is None or state.raised or state.deferring
            or not _main_thread()):
        return None
    state.raised = True
    return Interrupted(state.signum)


@contextlib.contextmanager
def atomic() -> Iterator[None]:
    """Hold a first signal while the body runs (a process started and its pid
    recorded), then raise it: the body is never cut in half, the interrupt still
    comes. Inside a teardown's `deferred()` the teardown keeps it."""
    with deferred():
        yield
    stop = pending()
    if stop is not None:
        raise stop
