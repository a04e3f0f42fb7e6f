"""Wire types of the repo-reader protocol: msgspec Structs and subject names, no I/O."""

from contracts.errors import ErrorCode, ErrorReply, RepoReaderError
from contracts.research import (
    FileConstraints,
    LicenseConstraints,
    RepoConstraints,
    RepoReaderRequest,
    RepoReaderResponse,
    ResearchArtifact,
    ResolvedRepo,
    ResultLimits,
)
from contracts.subjects import (
    ADMIN_SUBJECTS,
    CONTENT_TYPE_JSON,
    CONTENT_TYPE_MSGPACK,
    HEADER_CONTENT_TYPE,
    HEADER_REQUEST_ID,
    HEADER_SERVICE_ERROR,
    HEADER_SERVICE_ERROR_CODE,
    QUEUE_GROUP,
    SERVICE_NAME,
    WORKER_SUBJECTS,
    Subject,
)

__all__ = [
    "ADMIN_SUBJECTS",
    "CONTENT_TYPE_JSON",
    "CONTENT_TYPE_MSGPACK",
    "HEADER_CONTENT_TYPE",
    "HEADER_REQUEST_ID",
    "HEADER_SERVICE_ERROR",
    "HEADER_SERVICE_ERROR_CODE",
    "QUEUE_GROUP",
    "SERVICE_NAME",
    "WORKER_SUBJECTS",
    "ErrorCode",
    "ErrorReply",
    "FileConstraints",
    "LicenseConstraints",
    "RepoConstraints",
    "RepoReaderError",
    "RepoReaderRequest",
    "RepoReaderResponse",
    "ResearchArtifact",
    "ResolvedRepo",
    "ResultLimits",
    "Subject",
]
