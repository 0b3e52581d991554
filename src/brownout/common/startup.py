"""What a Brownout process does first, before it imports the rest of the package."""

from __future__ import annotations

import sys


def without_hypothesis() -> None:
    """Make Hypothesis unimportable in this process, unless something already imported it.

    The Kafka protocol library (kio) registers a Hypothesis strategy for each of its types
    at import whenever Hypothesis is installed: a test dependency, and common in
    developers' environments. That is 0.2-0.3 s of CPU per process (about 3 s in a
    directory without Hypothesis's Unicode cache), for data no node or command generates.
    Only the entry points call this (a node's `__main__`, the `brownout` command), never
    a module a test imports: the suite's own Hypothesis tests keep it.
    """
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]
