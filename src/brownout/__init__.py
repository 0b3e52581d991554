"""Brownout: a laboratory for Kafka availability and durability.

    from brownout import Cluster, run      # brownout.api's names, loaded on first use

`import brownout` itself stays light (the command line and the node import it); the lab,
the scenario runner and Arrow load when one of these names is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import Cluster, Run, run

__version__ = "0.1.0"

__all__ = ["Cluster", "Run", "__version__", "run"]

_API = ("Cluster", "Run", "run")


def __getattr__(name: str) -> Any:
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
