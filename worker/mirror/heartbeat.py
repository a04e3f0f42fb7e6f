"""The running mirror service's heartbeat: how workers learn that something watches the cache.

`mirror serve` publishes a MirrorHeartbeat in the cache (atomically) when it starts, every
`HEARTBEAT_SECONDS`, and whenever its schedule moves (a round of syncs starts or ends); it
removes the file when it stops. A worker answering `repo.status` believes a service runs
only while the heartbeat is fresh, so a service that died says nothing after a few periods.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import socket
from collections.abc import Sequence
from typing import Final

from worker.repos.layout import CacheLayout, MirrorHeartbeat

HEARTBEAT_SECONDS: Final = 10.0


class Heartbeat:
    """Publishes one mirror service's heartbeat into its cache."""

    def __init__(
        self,
        layout: CacheLayout,
        *,
        interval: float | None,
        scheduled_docs: Sequence[str] = (),
        every: float = HEARTBEAT_SECONDS,
    ) -> None:
        self.layout = layout
        self.interval = interval
        self.scheduled_docs = tuple(scheduled_docs) if interval else ()
        self.every = every
        self.started_at = _now()
        self.next_sync_at: dt.datetime | None = None

    def beat(self) -> None:
        """Publish the heartbeat now."""
        self.layout.write_heartbeat(
            MirrorHeartbeat(
                pid=os.getpid(),
                host=socket.gethostname(),
                started_at=self.started_at,
                beat_at=_now(),
                every_seconds=self.every,
                interval_seconds=self.interval,
                next_sync_at=self.next_sync_at,
                scheduled_docs=self.scheduled_docs,
            )
        )

    def syncing(self) -> None:
        """A scheduled round of syncs starts."""
        self.next_sync_at = None
        self.beat()

    def idle_until(self, seconds: float) -> None:
        """The next scheduled round starts in `seconds`."""
        self.next_sync_at = _now() + dt.timedelta(seconds=seconds)
        self.beat()

    async def run(self, stop: asyncio.Event) -> None:
        """Beat every `every` seconds until `stop` is set."""
        while not stop.is_set():
            self.beat()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.every)

    def remove(self) -> None:
        """Say that no service runs any more."""
        self.layout.heartbeat_file.unlink(missing_ok=True)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)
