"""Test doubles for an orchestrator's own tests: the mock Repo Reader (`MockRepoReader`)."""

from worker.testing.mock import (
    MockCall,
    MockConfigurationError,
    MockRepo,
    MockRepoReader,
    MockRepoReaderClient,
    WireReply,
    blob_id,
    fake_sha,
)

__all__ = [
    "MockCall",
    "MockConfigurationError",
    "MockRepo",
    "MockRepoReader",
    "MockRepoReaderClient",
    "WireReply",
    "blob_id",
    "fake_sha",
]
