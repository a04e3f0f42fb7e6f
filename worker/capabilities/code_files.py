"""The `code.read` and `code.list` capabilities: bounded reads and listings of a tree at a revision.

A read returns exactly lines `span` of one file, at most the server's line and
character bounds, and says where to continue. Binary blobs, blobs larger than the
server excerpts, symlinks and submodules give metadata only; a symlink gives its
target as stored (and the in-tree path it names, when there is one), never the
content behind it. A blob's size is read from its object header before anything else,
and a blob above the bound is never loaded: its license is that of the nearest license
file, as its own SPDX header is never read.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import msgspec
import pygit2

from contracts.code import (
    CodeListRequest,
    CodeListResponse,
    CodeReadRequest,
    CodeReadResponse,
    DirectoryEntry,
)
from worker.capabilities.code_search.search import line_count
from worker.capabilities.tooling import (
    Attribution,
    LicensedFiles,
    commit_tree,
    pin,
    within_ceiling,
)
from worker.config import Config, ToolLimits
from worker.errors import InvalidRequest, LimitExceeded, NotFound, Timeout
from worker.languages import language_of
from worker.licenses import LicenseCache
from worker.repos.catalog import RepoCatalog, ResolvedRepo
from worker.repos.excerpts import decode_text, is_binary
from worker.repos.swhid import content_swhid, origin_url
from worker.repos.tree_paths import (
    MODE_TREE,
    TreeEntry,
    entry_kind,
    entry_name,
    find_entry,
    resolve_link_target,
    split_repo_path,
    stored_path,
)


@dataclass(frozen=True, slots=True)
class _Range:
    start: int
    end: int


class CodeFiles:
    """Answers code.read and code.list from the mirrored repositories."""

    def __init__(self, config: Config, catalog: RepoCatalog, licenses: LicenseCache) -> None:
        self.config = config
        self.catalog = catalog
        self.licenses = licenses

    def read(self, request: CodeReadRequest, *, request_id: str) -> CodeReadResponse:
        """A bounded excerpt of the file at `request.path`, or its metadata only."""
        segments, wanted = check_read(request, self.config.tools)
        pinned = pin(self.catalog, request.repo, request.revision)
        licensed = LicensedFiles(pinned, self.licenses, required=request.require_license)
        tree = commit_tree(pinned)
        entry = find_entry(tree, segments, field="path")
        base = CodeReadResponse(
            request_id=request_id,
            repo=pinned.name,
            commit=pinned.commit,
            ref=pinned.ref,
            path=entry.path,
            kind=entry.kind,
            mode=entry.mode,
            blob=entry.id,
            language=language_of(entry.path) if entry.kind == "file" else None,
        )
        if entry.kind == "directory":
            raise InvalidRequest(
                f"path: {entry.path!r} is a directory; list it with code.list",
                field="path",
                kind="directory",
            )
        if entry.kind == "submodule":
            return base
        size = int(pinned.repo.odb.read_header(entry.id)[1])
        if size > self.config.server.max_blob_bytes:
            attribution = licensed.of(entry.path, entry.id, None)
            return _replace(base, **_common(size, attribution), too_large=True)
        blob = pinned.repo[entry.id]
        assert isinstance(blob, pygit2.Blob)
        data = blob.data
        common = _common(size, licensed.of(entry.path, entry.id, data))
        if entry.kind == "symlink":
            return _replace(base, **common, **_link(tree, entry, data))
        if is_binary(data):
            return _replace(base, **common, binary=True)
        return _replace(base, **common, **self._excerpt(pinned, entry, data, wanted))

    def _excerpt(
        self, pinned: ResolvedRepo, entry: TreeEntry, data: bytes, wanted: _Range
    ) -> dict[str, object]:
        text = decode_text(data)
        assert text is not None
        lines = text.lines
        total = line_count(list(lines)) if data else 0
        fields: dict[str, object] = {"encoding": text.encoding, "total_lines": total}
        if total == 0:
            return {**fields, "content": ""}
        if wanted.start > total:
            raise InvalidRequest(
                f"start_line: {wanted.start} is past the end of {entry.path!r} ({total} lines)",
                field="start_line",
                total_lines=total,
            )
        end = min(wanted.end, total)
        budget = self.config.tools.read_max_chars
        taken, used = 0, 0
        for number in range(wanted.start, end + 1):
            cost = len(lines[number - 1]) + (1 if taken else 0)
            if used + cost > budget:
                break
            taken += 1
            used += cost
        partial = taken == 0
        if partial:
            content, last = lines[wanted.start - 1][:budget], wanted.start
        else:
            last = wanted.start + taken - 1
            content = "\n".join(lines[wanted.start - 1 : last])
        return {
            **fields,
            "content": content,
            "span": f"L{wanted.start}-L{last}",
            "truncated": partial or last < end,
            "partial_line": partial,
            "next_start_line": last + 1 if last < total else None,
            "swhid": content_swhid(
                blob=entry.id,
                origin=origin_url(pinned.state.url),
                commit=pinned.commit,
                path=stored_path(pinned.repo, pinned.commit, entry.path),
                start_line=wanted.start,
                end_line=last,
            ),
        }

    def list(
        self, request: CodeListRequest, *, request_id: str, deadline: float
    ) -> CodeListResponse:
        """The entries of the directory at `request.path`, capped at `max_entries`."""
        segments, cap = check_list(request, self.config.tools)
        pinned = pin(self.catalog, request.repo, request.revision)
        tree = commit_tree(pinned)
        entry = find_entry(tree, segments, field="path")
        if entry.kind != "directory":
            raise InvalidRequest(
                f"path: {entry.path!r} is a {entry.kind}, not a directory",
                field="path",
                kind=entry.kind,
            )
        directory = pinned.repo[entry.id]
        assert isinstance(directory, pygit2.Tree)
        entries: list[DirectoryEntry] = []
        truncated = False
        for item in _walk(pinned.repo, directory, entry.path, recursive=request.recursive):
            if time.monotonic() > deadline:
                raise Timeout(
                    "code.list ran out of its time budget", stage="code.list", listed=len(entries)
                )
            if len(entries) == cap:
                truncated = True
                break
            entries.append(item)
        return CodeListResponse(
            request_id=request_id,
            repo=pinned.name,
            commit=pinned.commit,
            ref=pinned.ref,
            path=entry.path,
            entries=tuple(entries),
            total=len(entries),
            truncated=truncated,
        )


def check_read(request: CodeReadRequest, limits: ToolLimits) -> tuple[tuple[str, ...], _Range]:
    """The path's segments and the lines to read, or the failure the request alone is refused
    with (a path that cannot be in a tree, a range backwards or above the ceiling)."""
    segments = split_repo_path(request.path, field="path")
    start = request.start_line or 1
    if request.end_line is None:
        return segments, _Range(start, start + limits.read_default_lines - 1)
    if request.end_line < start:
        raise InvalidRequest(
            f"end_line: {request.end_line} is before start_line {start}", field="end_line"
        )
    count = request.end_line - start + 1
    if count > limits.read_max_lines:
        raise LimitExceeded(
            f"end_line: {count} lines is above the ceiling of {limits.read_max_lines}",
            field="end_line",
            limit=limits.read_max_lines,
            value=count,
        )
    return segments, _Range(start, request.end_line)


def check_list(request: CodeListRequest, limits: ToolLimits) -> tuple[tuple[str, ...], int]:
    """The directory's segments and the entries to list at most, or the failure the request
    alone is refused with."""
    segments = split_repo_path(request.path, field="path", allow_root=True)
    cap = within_ceiling(
        "max_entries",
        request.max_entries,
        default=limits.list_default_entries,
        ceiling=limits.list_max_entries,
    )
    return segments, cap


def _walk(
    repo: pygit2.Repository, tree: pygit2.Tree, prefix: str, *, recursive: bool
) -> Iterator[DirectoryEntry]:
    """Entries of `tree` in name order, depth first (a directory before its content)."""
    for name, item in sorted(((entry_name(item), item) for item in tree), key=lambda e: e[0]):
        mode = int(item.filemode)
        path = f"{prefix}/{name}" if prefix else name
        kind = entry_kind(mode)
        size = int(repo.odb.read_header(item.id)[1]) if kind in ("file", "symlink") else 0
        yield DirectoryEntry(name=name, path=path, type=kind, size=size)
        if recursive and mode == MODE_TREE:
            assert isinstance(item, pygit2.Tree)
            yield from _walk(repo, item, path, recursive=True)


def _common(size: int, attribution: Attribution) -> dict[str, object]:
    return {
        "size": size,
        "license": attribution.license,
        "license_source": attribution.source,
        "license_confidence": attribution.confidence,
    }


def _link(tree: pygit2.Tree, entry: TreeEntry, data: bytes) -> dict[str, object]:
    target = data.decode("utf-8", "replace")
    resolved = resolve_link_target(entry.path, target)
    if resolved is not None:
        try:
            find_entry(tree, split_repo_path(resolved))
        except (InvalidRequest, NotFound):
            resolved = None
    return {"symlink_target": target, "symlink_resolved": resolved}


def _replace(base: CodeReadResponse, **fields: object) -> CodeReadResponse:
    return msgspec.structs.replace(base, **fields)
