"""cancel_and_wait: stops tasks, and never swallows the stopper's own cancellation."""

from __future__ import annotations

import asyncio

import pytest

from brownout.common.tasks import cancel_and_wait


async def forever() -> None:
    await asyncio.Event().wait()


async def stubborn(release: asyncio.Event) -> None:
    """Finishes its cleanup before it honours a cancel."""
    try:
        await asyncio.Event().wait()
    finally:
        await release.wait()


def test_the_tasks_are_cancelled_and_awaited() -> None:
    async def scenario() -> None:
        tasks = [asyncio.create_task(forever()) for _ in range(3)]
        await asyncio.sleep(0)
        await cancel_and_wait(*tasks, None)
        assert all(t.cancelled() for t in tasks)

    asyncio.run(scenario())


def test_a_task_that_failed_raises_its_error_after_all_have_finished() -> None:
    async def fails() -> None:
        raise ValueError("broken")

    async def scenario() -> None:
        failed = asyncio.create_task(fails())
        other = asyncio.create_task(forever())
        await asyncio.sleep(0)
        with pytest.raises(ValueError, match="broken"):
            await cancel_and_wait(failed, other)
        assert other.cancelled()

    asyncio.run(scenario())


def test_the_waiters_own_cancellation_propagates() -> None:
    # The shape of the hang it replaces: a task stopping a child is itself cancelled
    # while it waits; it must stop, not carry on to its next await.
    async def scenario() -> None:
        release = asyncio.Event()
        child = asyncio.create_task(stubborn(release))
        carried_on = False

        async def stopper() -> None:
            nonlocal carried_on
            await cancel_and_wait(child)
            carried_on = True
            await forever()

        waiter = asyncio.create_task(stopper())
        await asyncio.sleep(0.05)
        waiter.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(waiter, 5)
        assert not carried_on and child.cancelled()

    asyncio.run(scenario())
