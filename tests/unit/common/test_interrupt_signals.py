"""The one place that maps SIGINT/SIGTERM to an interrupt: the first signal raises, later
ones are only noted, a teardown holds a first signal until it is done, ignored signals
stay ignored, and the exit status is 128 + the signal."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from brownout.common import interrupt
from brownout.common.interrupt import (
    Interrupted,
    atomic,
    deferred,
    exit_status,
    interruptible,
    pending,
)


@pytest.fixture(autouse=True)
def sigint_raises() -> Iterator[None]:
    """SIGINT as an interactive Python has it: a suite started in the background by a
    shell without job control inherits it ignored, and `interruptible` leaves an ignored
    signal ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_the_first_signal_raises_interrupted_with_its_number() -> None:
    notes: list[str] = []
    with pytest.raises(Interrupted) as caught, interruptible(notes.append):
        signal.raise_signal(signal.SIGTERM)
    assert caught.value.signum == signal.SIGTERM
    assert isinstance(caught.value, KeyboardInterrupt)
    assert exit_status(caught.value) == 143
    assert exit_status(KeyboardInterrupt()) == 130
    assert len(notes) == 1 and notes[0].startswith("SIGTERM: stopping")


def test_later_signals_are_only_noted_while_the_command_stops() -> None:
    notes: list[str] = []
    teardown_done = False
    with pytest.raises(Interrupted) as caught, interruptible(notes.append):
        try:
            signal.raise_signal(signal.SIGINT)
        finally:
            signal.raise_signal(signal.SIGINT)  # a second Ctrl-C during the teardown
            signal.raise_signal(signal.SIGTERM)
            teardown_done = True
    assert teardown_done
    assert caught.value.signum == signal.SIGINT
    assert len(notes) == 3 and all("already stopping" in n for n in notes[1:])


def test_a_teardown_holds_the_first_signal_until_it_is_done() -> None:
    notes: list[str] = []
    steps = []
    with interruptible(notes.append) as state:
        assert state is not None
        with deferred():
            signal.raise_signal(signal.SIGTERM)
            steps.append("teardown finished")
        steps.append("after")
        held = pending()
        assert pending() is None  # handed over once
    assert steps == ["teardown finished", "after"]
    assert held is not None and held.signum == signal.SIGTERM
    assert state.signum == signal.SIGTERM
    assert notes and "as soon as the step under way is done" in notes[0]


def test_pending_is_none_without_a_signal_or_outside_a_teardown() -> None:
    assert pending() is None
    with interruptible(lambda _: None):
        with deferred():
            pass
        assert pending() is None


def test_nested_interruptible_leaves_the_outer_handler_in_charge() -> None:
    with interruptible(lambda _: None) as outer:
        handler = signal.getsignal(signal.SIGTERM)
        with interruptible() as inner:
            assert inner is None
            assert signal.getsignal(signal.SIGTERM) is handler
        assert interrupt._installed is outer


def test_handlers_are_restored_and_an_ignored_signal_stays_ignored() -> None:
    before_term = signal.getsignal(signal.SIGTERM)
    before_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interruptible(lambda _: None):
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            signal.raise_signal(signal.SIGINT)  # ignored: nothing raised
        assert signal.getsignal(signal.SIGTERM) is before_term
        assert interrupt._installed is None
    finally:
        signal.signal(signal.SIGINT, before_int)


def test_atomic_finishes_its_body_then_raises() -> None:
    recorded = []
    with pytest.raises(Interrupted) as caught, interruptible(lambda _: None):
        with atomic():
            signal.raise_signal(signal.SIGINT)  # between the start and the record
            recorded.append("pid")
        recorded.append("not reached")
    assert recorded == ["pid"] and caught.value.signum == signal.SIGINT


def test_atomic_inside_a_teardown_leaves_the_signal_to_the_teardown() -> None:
    steps = []
    with interruptible(lambda _: None), deferred():
        with atomic():
            signal.raise_signal(signal.SIGTERM)
        steps.append("teardown goes on")
    assert steps == ["teardown goes on"]


def test_other_threads_are_never_interrupted() -> None:
    import threading

    results: list[object] = []
    with interruptible(lambda _: None) as state:
        assert state is not None
        state.signum = signal.SIGTERM  # a signal the main thread has not raised yet

        def worker() -> None:
            with atomic():
                pass
            results.append(pending())

        t = threading.Thread(target=worker)
        t.start()
        t.join()
        state.signum = None
    assert results == [None]
