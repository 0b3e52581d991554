"""`brownout run SCENARIO --repeat N [--jobs J]`: N independent runs and their summary.

Run k goes into OUT/run-00k with the seed derive_seed(seed, k): a fresh cluster each
time, its ports from the lab's allocator, nothing shared between runs but the scenario.
Then OUT/summary.json and a terminal table (summary.py).

    jobs 1    the runs one after another in this process, each with the live display of
              a single run
    jobs J>1  J runs at a time, each in a child process of its own (spawned, not forked:
              client libraries keep threads). A process per run because a run owns what
              a process has once: the signal handlers, faulthandler's watchdog, the
              client libraries' global state. Their lines are prefixed with the run's
              name. Ctrl-C or SIGTERM stops the children with SIGTERM (each tears its
              cluster down; they ignore the terminal's SIGINT so that they get exactly
              one signal), waits for them, and re-raises. A child also gets SIGTERM
              when the parent dies without doing so (killed: Linux's parent-death
              signal), so no run outlives the command.

With resume, runs already judged in OUT (a verdict.json of a run that was not
interrupted) are kept and only the others run: an interrupted run's directory is set
aside as run-00k.interrupted (kept, not judged) and the run starts again with its seed.

Exit status (`RepeatOutcome.exit_code`): 0 every run passed, 1 one failed, 3 none failed
and some were unknown (the lab was overloaded).
"""

from __future__ import annotations

import ctypes
import dataclasses
import multiprocessing
import multiprocessing.process
import os
import signal
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from ..check.stats import derive_seed
from ..common import interrupt
from .runner import preflight, run_scenario
from .schema import Scenario
from .summary import (
    SUMMARY_FILE,
    build_summary,
    load_entries,
    print_summary_tables,
    read_verdict,
    write_summary,
)

CHILD_STOP_TIMEOUT = 180.0  # a child's teardown after SIGTERM: nodes, pipeline, copies


@dataclasses.dataclass
class RepeatOutcome:
    out: Path
    summary: dict[str, Any]

    @property
    def exit_code(self) -> int:
        return int(self.summary["exit_code"])


def run_names(repeat: int) -> list[str]:
    width = max(3, len(str(repeat)))
    return [f"run-{k:0{width}d}" for k in range(1, repeat + 1)]


def plan(repeat: int, seed: int) -> list[tuple[str, int]]:
    """[(run directory name, seed)] of `repeat` runs seeded from `seed`."""
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    return [(name, derive_seed(seed, k)) for k, name in enumerate(run_names(repeat), 1)]


def judged(run_dir: Path) -> bool:
    """The run in `run_dir` ended and was judged: its verdict.json is there and does not
    say it was interrupted."""
    verdict = read_verdict(run_dir)
    return verdict is not None and not verdict.get("interrupted") and \
        verdict.get("error") != "interrupted"


def set_aside(run_dir: Path) -> Path | None:
    """Move an unfinished run's directory out of the way (NAME.interrupted, then
    NAME.interrupted-2, ...): kept for a look, never judged. None when there is none."""
    if not run_dir.exists():
        return None
    target = run_dir.with_name(f"{run_dir.name}.interrupted")
    k = 2
    while target.exists():
        target = run_dir.with_name(f"{run_dir.name}.interrupted-{k}")
        k += 1
    run_dir.rename(target)
    return target


def run_repeated(scenario: Scenario, out: Path, repeat: int, seed: int = 0, *,
                 jobs: int = 1, pipeline: bool = False,
                 console: Console | None = None, resume: bool = False) -> RepeatOutcome:
    """Run `scenario` `repeat` times into out/run-NNN, `jobs` at a time, and summarise;
    with `resume`, only the runs not judged yet (see the module docstring). Raises
    ScenarioRefused before any run when it cannot run here; Interrupted (a
    KeyboardInterrupt) after every started run has torn down."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    runs = plan(repeat, seed)
    preflight(scenario, pipeline)
    console = console or Console(highlight=False)
    out = Path(out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    todo = runs
    if resume:
        todo = [(name, s) for name, s in runs if not judged(out / name)]
        for name, _ in todo:
            aside = set_aside(out / name)
            if aside is not None:
                console.print(f"{name}: not finished, set aside as {aside.name}")
        console.print(f"resuming {out}: {len(runs) - len(todo)} of {repeat} run(s) judged "
                      f"already, {len(todo)} to run")
    codes: dict[str, int | None] = {}
    if jobs == 1:
        for name, run_seed in todo:
            console.rule(f"{name} of {repeat}: seed {run_seed}")
            run_scenario(scenario, out / name, run_seed, pipeline=pipeline, console=console)
    else:
        codes = _run_children(scenario, out, todo, jobs, pipeline, console)
    summary = build_summary(scenario.name, load_entries(out, runs, codes), seed=seed,
                            jobs=jobs, over_runs=scenario.over_runs)
    write_summary(out, summary)
    console.rule(f"{scenario.name}: {repeat} run(s)")
    print_summary_tables(summary, console)
    console.print(f"summary: {out / SUMMARY_FILE}")
    return RepeatOutcome(out, summary)


PR_SET_PDEATHSIG = 1  # prctl(2)


def _die_with_parent(parent: int) -> None:
    """SIGTERM this process when its parent dies (Linux's parent-death signal), so a
    killed `--repeat` leaves no run behind; nothing where prctl is not there."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os.kill(os.getpid(), signal.SIGTERM)


def _child(scenario: Scenario, run_dir: Path, seed: int, pipeline: bool, tag: str,
           parent: int) -> None:
    """A run in a child process; its exit status is the run's (128 + the signal when
    interrupted)."""
    # Only the parent's SIGTERM stops a child: a second signal (the terminal's SIGINT to
    # the whole process group) would land in the middle of its teardown.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupt.interruptible():
            _die_with_parent(parent)
            outcome = run_scenario(scenario, run_dir, seed, pipeline=pipeline, live=False,
                                   tag=tag)
    except KeyboardInterrupt as e:
        raise SystemExit(interrupt.exit_status(e)) from None
    raise SystemExit(outcome.exit_code)


def _run_children(scenario: Scenario, out: Path, runs: list[tuple[str, int]], jobs: int,
                  pipeline: bool, console: Console) -> dict[str, int | None]:
    """Each run in a spawned child, `jobs` at a time; {run name: exit status}."""
    context = multiprocessing.get_context("spawn")
    pending = list(runs)
    running: dict[str, multiprocessing.process.BaseProcess] = {}
    codes: dict[str, int | None] = {}
    with interrupt.interruptible():
        try:
            while pending or running:
                while pending and len(running) < jobs:
                    name, run_seed = pending.pop(0)
                    console.print(f"{name}: seed {run_seed}, directory {out / name}")
                    child = context.Process(target=_child, name=name, args=(
                        scenario, out / name, run_seed, pipeline, name, os.getpid()))
                    with interrupt.atomic():  # a started child is always stopped
                        child.start()
                        running[name] = child
                time.sleep(0.2)
                for name, child in list(running.items()):
                    if not child.is_alive():
                        child.join()
                        codes[name] = child.exitcode
                        del running[name]
        except BaseException:
            with interrupt.deferred():
                _stop_children(running, console)
            raise
    return codes


def _stop_children(running: dict[str, multiprocessing.process.BaseProcess],
                   console: Console) -> None:
    """SIGTERM every child (each tears its run down) and wait; SIGKILL what is left
    after CHILD_STOP_TIMEOUT."""
    console.print(f"[yellow]interrupted: stopping {len(running)} run(s)[/yellow]")
    for child in running.values():
        if child.is_alive():
            child.terminate()  # SIGTERM: the run tears its cluster down
    deadline = time.monotonic() + CHILD_STOP_TIMEOUT
    for child in running.values():
        child.join(max(0.0, deadline - time.monotonic()))
        if child.is_alive():
            child.kill()
            child.join(5.0)
