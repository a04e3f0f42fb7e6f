"""Paths inside a git tree: validated as text, then walked object by object, never touching disk.

A caller's path names an entry of the tree at a resolved commit. It is checked before
anything is looked up (no leading `/`, no `.`, `..` or empty segments, no NUL), and it
is resolved one segment at a time through tree objects, so a symlink in the middle of a
path is never followed and nothing is ever joined onto a filesystem path.

Git separates a path with `/` only and a tree entry's name may hold any other byte but
NUL, so a backslash, a tab or a line break is an ordinary character of a name: every
path a tree holds can be read (and listed and searched). A name is bytes, not always UTF-8
(Latin-1 from older tools); the wire carries text, so a byte that does not decode is shown
as U+FFFD (`path_text`), and a path so shown is found again.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Final

import pygit2

from worker.errors import InvalidRequest, NotFound

MODE_TREE: Final = 0o040000
MODE_LINK: Final = 0o120000
MODE_COMMIT: Final = 0o160000
REPLACEMENT: Final = "\ufffd"
"""What a byte of a name that is not UTF-8 is shown as."""


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """An entry found at a path: its kind (`file`, `directory`, `symlink`, `submodule`)."""

    path: str
    name: str
    kind: str
    mode: int
    id: str


def path_text(raw: bytes) -> str:
    """A git name or path as text: UTF-8, with U+FFFD for each byte that does not decode."""
    return raw.decode("utf-8", "replace")


def entry_name(entry: pygit2.Object) -> str:
    """The name of a tree entry as text (see `path_text`)."""
    return path_text(entry.raw_name or b"")


def entry_kind(mode: int) -> str:
    """The kind of a tree entry from its git file mode."""
    if mode == MODE_TREE:
        return "directory"
    if mode == MODE_LINK:
        return "symlink"
    if mode == MODE_COMMIT:
        return "submodule"
    return "file"


def split_repo_path(path: str, *, field: str = "path", allow_root: bool = False) -> tuple[str, ...]:
    """The segments of `path`, or InvalidRequest naming `field` and what is wrong with it.

    The empty path is the root (when `allow_root`), returned as no segments.
    """
    if path == "":
        if allow_root:
            return ()
        raise InvalidRequest(f"{field}: the path is empty", field=field, reason="empty")
    problem = _path_problem(path)
    if problem is not None:
        raise InvalidRequest(
            f"{field}: {path!r} is not a path inside the repository ({problem})",
            field=field,
            reason=problem,
        )
    return tuple(path.split("/"))


def _path_problem(path: str) -> str | None:
    if path.startswith("/"):
        return "absolute path"
    if "\0" in path:
        return "NUL character"
    for segment in path.split("/"):
        if segment == "":
            return "empty segment"
        if segment in (".", ".."):
            return f"'{segment}' segment"
    return None


def find_entry(tree: pygit2.Tree, segments: tuple[str, ...], *, field: str = "path") -> TreeEntry:
    """The entry at `segments` under `tree` (the root itself for no segments), else NotFound."""
    path = "/".join(segments)
    if not segments:
        return TreeEntry(path="", name="", kind="directory", mode=MODE_TREE, id=str(tree.id))
    current = tree
    for depth, name in enumerate(segments):
        walked = "/".join(segments[:depth])
        entry = tree_child(current, name, field=field)
        if entry is None:
            raise NotFound(
                f"{field}: {path!r} does not exist at this revision",
                field=field,
                path=path,
                missing=walked + ("/" if walked else "") + name,
            )
        mode = int(entry.filemode)
        if depth == len(segments) - 1:
            return TreeEntry(
                path=path, name=name, kind=entry_kind(mode), mode=mode, id=str(entry.id)
            )
        if mode != MODE_TREE:
            raise NotFound(
                f"{field}: {path!r} does not exist at this revision "
                f"({'/'.join(segments[: depth + 1])} is a {entry_kind(mode)}, not a directory)",
                field=field,
                path=path,
                missing="/".join(segments[: depth + 2]),
                blocked_by=entry_kind(mode),
            )
        assert isinstance(entry, pygit2.Tree)
        current = entry
    raise AssertionError("unreachable")


def tree_child(tree: pygit2.Tree, name: str, *, field: str = "path") -> pygit2.Object | None:
    """The entry of `tree` named `name`, as stored or as `path_text` shows it, else None.

    Names that differ only in bytes that are not UTF-8 show alike: naming one of them is
    InvalidRequest, not a guess.
    """
    if name in tree:
        return tree[name]
    if REPLACEMENT not in name:
        return None
    shown = [entry for entry in tree if entry_name(entry) == name]
    if len(shown) > 1:
        raise InvalidRequest(
            f"{field}: {name!r} names {len(shown)} entries whose names differ only in bytes "
            "that are not UTF-8",
            field=field,
            reason="ambiguous name",
        )
    return shown[0] if shown else None


def stored_path(repo: pygit2.Repository, commit: str, path: str) -> bytes:
    """The bytes git stores at `commit` for the path `path_text` shows as `path` (its UTF-8
    unless a name of it shows U+FFFD); its UTF-8 as well when no single entry is shown so."""
    if REPLACEMENT not in path:
        return path.encode()
    names: list[bytes] = []
    current: pygit2.Object = repo[commit].peel(pygit2.Tree)
    try:
        for name in path.split("/"):
            entry = tree_child(current, name) if isinstance(current, pygit2.Tree) else None
            if entry is None:
                return path.encode()
            names.append(entry.raw_name or b"")
            current = entry
    except InvalidRequest:  # names that show alike: none of them is the one shown
        return path.encode()
    return b"/".join(names)


def resolve_link_target(link_path: str, target: str) -> str | None:
    """The in-tree path a symlink at `link_path` points to, or None when it leaves the tree.

    Pure string arithmetic on '/'-separated paths: an absolute target, or one whose `..`
    segments climb above the root, leaves the tree. A backslash is part of a name, as in git.
    """
    if not target or target.startswith("/") or "\0" in target:
        return None
    parts: list[str] = [p for p in posixpath.dirname(link_path).split("/") if p]
    for segment in target.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(segment)
    return "/".join(parts) or None
