"""The CLI's one way to reach the service: a client as the environment's credentials say."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from worker.client import RepoReaderClient


async def connect(url: str, *, timeout: float, **options: Any) -> RepoReaderClient:
    """A `RepoReaderClient` on `url` with the user, password and inbox prefix of
    `NatsCredentials.from_environment`; `options` go to `RepoReaderClient.connect`."""
    from worker.client import RepoReaderClient
    from worker.service.connection import NatsCredentials

    credentials = NatsCredentials.from_environment()
    return await RepoReaderClient.connect(
        url,
        user=credentials.user,
        password=credentials.password,
        inbox_prefix=credentials.inbox_prefix,
        timeout=timeout,
        **options,
    )
