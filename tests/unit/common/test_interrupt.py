"""The one place that maps SIGINT/SIGTERM to an interrupt: the first signal raises, later
ones are only noted, a teardown holds a first signal until it is done, ignored signals
stay ignored, and the exit status is 128 + the signal."""

from __future__ import annotations

import signal

import pytest

from brownout.common import interrupt
from brownout.common.interrupt import Interrupted, deferred, exit_status, interruptible, pending


def test_the_first_signal_raises_interrupted_with_its_number() -> None:
    notes: list[str] = []
    with pytest.raises(Interrupted) as caught, interruptible(notes.append):
        signal.raise_signal(signal.SIGTERM)
    assert caught.value.signum == signal.SIGTERM
    assert isinstance(caught.value, KeyboardInterrupt)
    assert exit_status(caught.value) == 143
    assert exit_status(KeyboardInterrupt()) == 130
    assert notes == []


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
    assert len(notes) == 2 and all("already stopping" in n for n in notes)


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
    assert notes and "once the teardown" in notes[0]


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
