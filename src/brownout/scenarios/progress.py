"""What a scenario run tells the terminal while it runs.

The runner and its stages only call the `Progress` interface: `phase` when a phase
starts, `say` for a line of news, `fault` for a nemesis fault's outcome, `watch` to show
a workload's live numbers. Two displays implement it:

    LiveProgress   one run in the foreground: its lines scroll above a live panel
                   (phase, elapsed, write rate, errors, faults so far) redrawn 4 times a
                   second; the panel disappears when the run ends
    LineProgress   runs side by side (`--repeat N --jobs J`): plain lines, each prefixed
                   with the run's tag, no panel (two live panels cannot share a terminal)

Both are written to by the main thread and the schedule thread.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any, Protocol

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.text import Text

from ..workload.run import WorkloadRun
from .schema import Scenario


class Progress(Protocol):
    console: Console

    def showing(self) -> contextlib.AbstractContextManager[None]:
        """While open, the display is up; closing it takes it down (also on errors)."""
        ...

    def phase(self, name: str) -> None: ...

    def say(self, text: str, style: str | None = None) -> None: ...

    def fault(self, line: str, ok: bool) -> None: ...

    def watch(self, run: WorkloadRun | None, started: float | None = None) -> None:
        """Show `run`'s numbers from now on (None: stop), its workload `started` at
        that monotonic time."""
        ...


class LineProgress:
    """Plain lines, each prefixed with `tag` (e.g. "run-002") when given."""

    def __init__(self, console: Console, tag: str | None = None) -> None:
        self.console = console
        self.tag = tag
        self.started = time.monotonic()
        self.faults: list[str] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def showing(self) -> Iterator[None]:
        yield

    def _print(self, text: str, style: str | None) -> None:
        prefix = f"{self.tag} " if self.tag else ""
        self.console.print(escape(prefix + text), style=style, highlight=False)

    def phase(self, name: str) -> None:
        self._print(f"[{time.monotonic() - self.started:6.1f}s] {name}", "cyan")

    def say(self, text: str, style: str | None = None) -> None:
        self._print(text, style)

    def fault(self, line: str, ok: bool) -> None:
        with self._lock:
            self.faults.append(line)
        self._print("  " + line, "yellow" if ok else "red")

    def watch(self, run: WorkloadRun | None, started: float | None = None) -> None:
        pass


class LiveProgress(LineProgress):
    """Lines above a live panel of the run's numbers (one run at a time per terminal)."""

    def __init__(self, console: Console, scenario: Scenario) -> None:
        super().__init__(console)
        self.scenario = scenario
        self.phase_name = "cluster"
        self.run: WorkloadRun | None = None
        self.workload_started: float | None = None
        self.last_sent = 0
        self.last_at = time.monotonic()
        self.rate = 0.0
        self._live: Live | None = None

    @contextlib.contextmanager
    def showing(self) -> Iterator[None]:
        with Live(self.render(), console=self.console, refresh_per_second=4,
                  transient=True, get_renderable=self.render) as live:
            self._live = live
            try:
                yield
            finally:
                # Lines printed after this (teardown, interruption) go straight to the
                # console: the panel is gone.
                self._live = None

    def _print(self, text: str, style: str | None) -> None:
        console = self._live.console if self._live is not None else self.console
        console.print(escape(text), style=style, highlight=False)

    def phase(self, name: str) -> None:
        self.phase_name = name
        super().phase(name)

    def watch(self, run: WorkloadRun | None, started: float | None = None) -> None:
        self.run = run
        if started is not None:
            self.workload_started = started

    def render(self) -> Any:
        now = time.monotonic()
        head = Text()
        head.append(f"{self.scenario.name}", style="bold")
        head.append(f"  phase {self.phase_name}  elapsed {now - self.started:5.1f}s")
        if self.workload_started is not None and self.phase_name == "workload":
            head.append(f"  workload {now - self.workload_started:5.1f}s/"
                        f"{self.scenario.duration:g}s")
        lines: list[Any] = [head]
        run = self.run
        if run is not None and run.history is not None:
            t = run.totals()
            sent = t.get("sent", 0)
            dt = now - self.last_at
            if dt >= 1.0:
                self.rate = (sent - self.last_sent) / dt
                self.last_sent, self.last_at = sent, now
            errors: dict[str, int] = {}
            for g in run.producers:
                for k, v in g.errors().items():
                    errors[k] = errors.get(k, 0) + v
            top = ", ".join(f"{k} {v}" for k, v in sorted(errors.items(),
                                                         key=lambda kv: -kv[1])[:3])
            lines.append(Text(
                f"writes {self.rate:6.0f}/s  sent {sent}  acked {t.get('acked', 0)}  "
                f"failed {t.get('failed', 0)}  info {t.get('info', 0)}"
                + (f"  polled {t.get('polled', 0)}" if run.consumers else "")
                + (f"  errors: {top}" if top else "")))
        with self._lock:
            lines.append(Text(f"faults so far: {len(self.faults)}"
                              + (f"  (last: {self.faults[-1]})" if self.faults else "")))
        return Group(*lines)
