"""NATS subject names, queue group and header names of the repo-reader wire protocol.

The major version lives in the subject: a breaking change gets `repo_reader.v2`.
"""

from __future__ import annotations

import enum
import re
from typing import Final

PREFIX: Final = "repo_reader.v1"
QUEUE_GROUP: Final = "repo_reader.workers"
SERVICE_NAME: Final = "repo_reader"


class Subject(enum.StrEnum):
    """Every subject the service answers on."""

    RESEARCH = f"{PREFIX}.research"
    CODE_SEARCH = f"{PREFIX}.code.search"
    CODE_READ = f"{PREFIX}.code.read"
    CODE_LIST = f"{PREFIX}.code.list"
    GIT_HISTORY = f"{PREFIX}.git.history"
    GIT_CHURN = f"{PREFIX}.git.churn"
    REPO_STATUS = f"{PREFIX}.repo.status"
    GRAPH_SEARCH = f"{PREFIX}.graph.search"
    GRAPH_TRAVERSE = f"{PREFIX}.graph.traverse"
    GRAPH_RETRIEVE = f"{PREFIX}.graph.retrieve"
    GRAPH_DIFF = f"{PREFIX}.graph.diff"
    DOCS_REGENERATE = f"{PREFIX}.docs.regenerate"
    ADMIN_SYNC = f"{PREFIX}.admin.sync"
    ADMIN_REBUILD_INDEX = f"{PREFIX}.admin.rebuild_index"

    @property
    def capability(self) -> str:
        """The capability name used in config and logs, e.g. ``code.search``."""
        return self.value.removeprefix(f"{PREFIX}.")


ADMIN_SUBJECTS: Final = (Subject.ADMIN_SYNC, Subject.ADMIN_REBUILD_INDEX)
MIRROR_SUBJECTS: Final = (Subject.DOCS_REGENERATE, *ADMIN_SUBJECTS)
"""Served by the mirror (the only writer of the cache), in its own queue group; never by workers."""
WORKER_SUBJECTS: Final = tuple(s for s in Subject if s not in MIRROR_SUBJECTS)

REQUEST_STREAM: Final = "REPO_READER_REQUESTS"
"""The JetStream stream of durable requests (sandbox/nats.conf names it)."""
WORKER_CONSUMER: Final = "WORKERS"
"""The workers' pull consumer of REQUEST_STREAM: the only one they may fetch from."""

HEADER_CONTENT_TYPE: Final = "Content-Type"
HEADER_REQUEST_ID: Final = "Repo-Reader-Request-Id"
HEADER_REPLY_TO: Final = "Repo-Reader-Reply-To"
"""Where the answer to a durable request goes (a stream message's own reply is its ack)."""
HEADER_MSG_ID: Final = "Nats-Msg-Id"
"""JetStream de-duplicates durable requests by this header: the request id."""

DURABLE_PREFIX: Final = f"{PREFIX}.durable"
"""Durable requests are published to `repo_reader.v1.durable.<capability>`, into the stream."""


def durable_subject(subject: Subject) -> str:
    """The stream subject a durable request for `subject` is published to."""
    return f"{DURABLE_PREFIX}.{subject.capability}"


REQUEST_ID_MAX_LENGTH: Final = 128
REQUEST_ID_PATTERN: Final = rf"^[A-Za-z0-9._:-]{{1,{REQUEST_ID_MAX_LENGTH}}}$"
"""What a request id may be: it is echoed in every reply message and log line, so it is short
and plain (a UUID, a ULID, `orchestrator:42`). A request without one gets a fresh id; a request
with any other is refused as INVALID_REQUEST under a fresh id."""
# nats micro conventions, so generic NATS tooling sees failed requests as errors.
HEADER_SERVICE_ERROR: Final = "Nats-Service-Error"
HEADER_SERVICE_ERROR_CODE: Final = "Nats-Service-Error-Code"

CONTENT_TYPE_JSON: Final = "application/json"
CONTENT_TYPE_MSGPACK: Final = "application/msgpack"

DEFAULT_INBOX_PREFIX: Final = "_INBOX"
"""Where replies go for a connection without a user (the NATS clients' default)."""
_INBOX_USER = re.compile(r"[^\s.*>]+")


def inbox_prefix_for(user: str | None) -> str:
    """The inbox prefix of a connection as `user`: `_INBOX_<user>`, `_INBOX` without a user.

    A NATS server can then let each user read the replies to its own requests and nobody
    else's (sandbox/nats.conf allows `_INBOX_orchestrator.>` to the orchestrator only); with
    the shared `_INBOX` whoever may subscribe to `_INBOX.>` reads every answer.
    """
    if not user:
        return DEFAULT_INBOX_PREFIX
    if _INBOX_USER.fullmatch(user) is None:
        raise ValueError(
            f"the NATS user {user!r} cannot name an inbox prefix (it holds white space, '.', "
            "'*' or '>'): give one explicitly (REPO_READER_NATS_INBOX_PREFIX)"
        )
    return f"{DEFAULT_INBOX_PREFIX}_{user}"
