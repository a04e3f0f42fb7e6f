"""The on-disk layout of the mirror cache and the state the mirror publishes in it.

    <cache>/repos/<owner>/<name>.git     bare mirror, full history (heads and tags)
    <cache>/state/<owner>/<name>.json    MirrorState, published last by each sync
    <cache>/licenses/<owner>/<name>.json IdentifiedLicenses of the published head
    <cache>/index/<owner>/<name>/...     search indexes (worker.index)
    <cache>/locks/<owner>/<name>.lock    serialises syncs of one repository
    <cache>/mirror/service.json          MirrorHeartbeat of the running mirror service

Only the mirror writes here, always atomically (temp + rename). Workers resolve a
repository's default branch through its published MirrorState, so they never see
a sync half done.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pygit2
import structlog

from worker.licenses.identify import TextLicense

log = structlog.get_logger(__name__)


class MirrorState(msgspec.Struct, frozen=True, kw_only=True):
    """What the last successful sync of one repository published."""

    repo: str
    url: str
    default_ref: str
    """The default branch as a full ref name, e.g. ``refs/heads/main``."""
    head: str
    """The default branch's commit at the end of the sync."""
    synced_at: dt.datetime
    indexed_commit: str | None = None
    """The commit whose search index is stored, when one is."""
    license: str | None = None
    """The SPDX expression of the root license at `head`, when one was detected."""
    license_source: str | None = None
    license_confidence: float | None = None
    """How sure the identification of the root license is (see `LicenseInfo.confidence`)."""
    additional_licenses: tuple[str, ...] = ()
    """Licenses of bundled code the root license files also carry."""


class IdentifiedLicenses(msgspec.Struct, frozen=True, kw_only=True):
    """The license files of one commit's tree, identified by the mirror."""

    commit: str
    texts: dict[str, TextLicense | None]
    """Blob id -> the license its text was identified as; None when it is no license the
    identifier recognises. Keyed by content, so an answer holds in any commit (a file
    written by an older version, with bare SPDX ids, does not decode: it is identified
    again)."""


class MirrorHeartbeat(msgspec.Struct, frozen=True, kw_only=True):
    """What a running `mirror serve` says about itself, rewritten every `every_seconds`.

    Workers read it to tell whether anything watches the cache: a file whose `beat_at` is
    older than a few periods belongs to a service that died without removing it.
    """

    pid: int
    host: str
    started_at: dt.datetime
    beat_at: dt.datetime
    every_seconds: float
    interval_seconds: float | None = None
    """The period of scheduled syncs; None when it syncs only on request."""
    next_sync_at: dt.datetime | None = None
    """When the next scheduled round of syncs starts; None while one runs, or with no schedule."""
    scheduled_docs: tuple[str, ...] = ()
    """Document types regenerated after each scheduled sync."""

    def alive(self, now: dt.datetime) -> bool:
        """Whether the heartbeat is recent enough to believe the service still runs."""
        return (now - self.beat_at).total_seconds() <= 3 * self.every_seconds + 5


_state_decoder = msgspec.json.Decoder(MirrorState)
_heartbeat_decoder = msgspec.json.Decoder(MirrorHeartbeat)
_licenses_decoder = msgspec.json.Decoder(IdentifiedLicenses)


def trust_configured_repositories() -> None:
    """Let libgit2 open repositories owned by another user, for this whole process.

    libgit2 refuses a repository whose owner is not the current user (git's
    safe.directory). Here every repository opened is one the operator configured: a source
    the mirror fetches from, or the cache a worker reads through a read-only mount that a
    different uid wrote. Nothing is ever executed from them.
    """
    pygit2.option(pygit2.enums.Option.SET_OWNER_VALIDATION, 0)


def read_mirrored_objects_unhashed() -> None:
    """Let libgit2 read objects without hashing each again to check its id, for this whole
    process.

    Every object in the cache was hashed once, when the mirror (its only writer) fetched it:
    indexing a received pack computes each id from the content. git reads objects unhashed
    too (its fsck checks them); libgit2's check would be a second SHA-1 of every byte a
    reader inflates, much of reading a blob that is already in the page cache.
    """
    pygit2.settings.enable_strict_hash_verification(False)


def keep_inflated_objects(max_bytes: int, max_blob_bytes: int) -> None:
    """Let libgit2 keep the objects this process reads inflated, blobs up to `max_blob_bytes`
    among them, `max_bytes` in all (0: keep none).

    By default libgit2 keeps trees and commits, never a blob: every search inflated each file
    it verifies again, and the candidates of a rare identifier are often a tree's largest
    files. Objects are content-addressed, so a kept one is never stale; libgit2 evicts (part
    of a repository's objects, or all of them) once the bytes kept pass `max_bytes`.
    """
    pygit2.settings.enable_caching(max_bytes > 0)
    pygit2.settings.cache_max_size(max_bytes)
    pygit2.settings.cache_object_limit(pygit2.enums.ObjectType.BLOB, max_blob_bytes)


class CacheLayout:
    """Paths inside one cache directory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def repo_dir(self, name: str) -> Path:
        """The bare repository of `owner/name`."""
        owner, repo = name.split("/", 1)
        return self.root / "repos" / owner / f"{repo}.git"

    def state_file(self, name: str) -> Path:
        """The published MirrorState of `owner/name`."""
        owner, repo = name.split("/", 1)
        return self.root / "state" / owner / f"{repo}.json"

    def licenses_file(self, name: str) -> Path:
        """The IdentifiedLicenses of the published head of `owner/name`."""
        owner, repo = name.split("/", 1)
        return self.root / "licenses" / owner / f"{repo}.json"

    def index_dir(self, name: str) -> Path:
        """Where the search indexes of `owner/name` live."""
        owner, repo = name.split("/", 1)
        return self.root / "index" / owner / repo

    def lock_file(self, name: str) -> Path:
        """The lock that serialises syncs of `owner/name`."""
        owner, repo = name.split("/", 1)
        return self.root / "locks" / owner / f"{repo}.lock"

    @property
    def heartbeat_file(self) -> Path:
        """Where the running mirror service publishes its MirrorHeartbeat."""
        return self.root / "mirror" / "service.json"

    def read_heartbeat(self) -> MirrorHeartbeat | None:
        """The last heartbeat of a mirror service; None when none runs (or ever wrote one)."""
        try:
            return _heartbeat_decoder.decode(self.heartbeat_file.read_bytes())
        except FileNotFoundError:
            return None
        except msgspec.DecodeError as exc:
            log.warning("heartbeat_unreadable", path=str(self.heartbeat_file), error=str(exc))
            return None

    def write_heartbeat(self, heartbeat: MirrorHeartbeat) -> None:
        """Publish `heartbeat` atomically."""
        atomic_write_bytes(self.heartbeat_file, msgspec.json.encode(heartbeat))

    def read_state(self, name: str) -> MirrorState | None:
        """The published state of `owner/name`, or None when it was never synced."""
        try:
            return _state_decoder.decode(self.state_file(name).read_bytes())
        except FileNotFoundError:
            return None

    def write_state(self, state: MirrorState) -> None:
        """Publish `state` atomically."""
        atomic_write_bytes(
            self.state_file(state.repo), msgspec.json.format(msgspec.json.encode(state))
        )

    def read_licenses(self, name: str) -> IdentifiedLicenses | None:
        """The license files the mirror identified for `owner/name`; None when there are none
        to read (never synced, or synced by a version that did not write them)."""
        path = self.licenses_file(name)
        try:
            return _licenses_decoder.decode(path.read_bytes())
        except FileNotFoundError:
            return None
        except msgspec.DecodeError as exc:
            # Only a memo of answers a reader can work out again: unreadable is as good as absent.
            log.warning("licenses_file_unreadable", path=str(path), error=str(exc))
            return None

    def write_licenses(self, name: str, licenses: IdentifiedLicenses) -> None:
        """Publish the identified license files of `owner/name` atomically."""
        atomic_write_bytes(self.licenses_file(name), msgspec.json.encode(licenses))

    @contextlib.contextmanager
    def sync_lock(self, name: str) -> Iterator[None]:
        """Hold the exclusive sync lock of `owner/name`."""
        path = self.lock_file(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
