"""Stopping asyncio tasks without swallowing the stopper's own cancellation.

`task.cancel()` followed by `with suppress(CancelledError): await task` is the usual
way to stop a task, and it is wrong when the waiting code runs in a task that can be
cancelled too: a cancel() of the waiter arrives as the same CancelledError, is
suppressed, and the waiter carries on as if nobody had asked it to stop. A controller
event loop that resigned (stopping its channels) while being shut down did exactly
that, and its shutdown then waited for it forever.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def cancel_and_wait(*tasks: asyncio.Future[Any] | None) -> None:
    """Cancel `tasks` and wait until every one has finished.

    Their cancellation is not an error; the first other exception a task ended with is
    raised once all have finished. A cancellation of the caller itself propagates."""
    live = [task for task in tasks if task is not None]
    for task in live:
        task.cancel()
    outcomes = await asyncio.gather(*live, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, Exception):
            raise outcome
