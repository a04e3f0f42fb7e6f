"""Tests of paths inside a git tree: validation as text, walking object by object, link targets."""

from __future__ import annotations

import os
from pathlib import Path

import pygit2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.gitrepos import Symlink, make_repo
from worker.errors import InvalidRequest, NotFound
from worker.repos.tree_paths import (
    entry_name,
    find_entry,
    path_text,
    resolve_link_target,
    split_repo_path,
    stored_path,
)


@pytest.fixture
def tree(tmp_path: Path) -> pygit2.Tree:
    repo, head = make_repo(
        tmp_path / "repo",
        {"src/app.py": "x = 1\n", "link": Symlink("src"), "README": "hi\n"},
    )
    return repo[head].peel(pygit2.Commit).tree


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/etc/passwd", "absolute path"),
        ("../secret", "'..' segment"),
        ("src/../../x", "'..' segment"),
        ("./src", "'.' segment"),
        ("src//app.py", "empty segment"),
        ("src/", "empty segment"),
        ("src/app.py\0", "NUL character"),
        ("", "empty"),
    ],
)
def test_paths_that_could_leave_the_tree_are_refused(path: str, reason: str) -> None:
    """Traversal, absolute paths and ambiguous spellings are INVALID_REQUEST naming the field."""
    with pytest.raises(InvalidRequest) as error:
        split_repo_path(path, field="path")
    assert error.value.details == {"field": "path", "reason": reason}


@given(st.lists(st.text(alphabet="ab./\\", min_size=0, max_size=4), min_size=1, max_size=4))
def test_accepted_paths_have_only_plain_segments(parts: list[str]) -> None:
    """Whatever is accepted splits into non-empty segments that are neither '.' nor '..'."""
    path = "/".join(parts)
    try:
        segments = split_repo_path(path)
    except InvalidRequest:
        return
    assert all(s and s not in (".", "..") for s in segments)
    assert "/".join(segments) == path


@pytest.mark.parametrize("name", ["tab\there", "new\nline", "back\\slash", "del\x7f", "é"])
def test_any_name_a_tree_can_hold_is_accepted(name: str) -> None:
    """Git names may hold any character but '/' and NUL: those are plain segments."""
    assert split_repo_path(f"dir/{name}") == ("dir", name)


def test_entries_are_found_by_walking_tree_objects(tree: pygit2.Tree) -> None:
    """Files, directories and symlinks are found with their kind; the root has no segments."""
    assert find_entry(tree, ("src", "app.py")).kind == "file"
    assert find_entry(tree, ("src",)).kind == "directory"
    assert find_entry(tree, ("link",)).kind == "symlink"
    assert find_entry(tree, ()).kind == "directory"


def test_a_symlink_inside_a_path_is_never_followed(tree: pygit2.Tree) -> None:
    """`link/app.py` is NOT_FOUND although `link` points at `src`: links are not directories."""
    with pytest.raises(NotFound) as error:
        find_entry(tree, ("link", "app.py"))
    assert error.value.details["blocked_by"] == "symlink"
    with pytest.raises(NotFound) as missing:
        find_entry(tree, ("src", "nope.py"))
    assert missing.value.details["missing"] == "src/nope.py"


def test_a_name_that_is_not_utf8_is_found_by_the_text_it_is_shown_as(tmp_path: Path) -> None:
    """Latin-1 bytes of a name show as U+FFFD, and the shown path finds the entry again."""
    repo, head = make_repo(tmp_path / "repo", {os.fsdecode(b"dir\xff/caf\xe9.c"): "int x;\n"})
    tree = repo[head].peel(pygit2.Commit).tree
    (directory,) = list(tree)
    assert entry_name(directory) == "dir\ufffd"
    found = find_entry(tree, ("dir\ufffd", "caf\ufffd.c"))
    assert (found.path, found.kind) == ("dir\ufffd/caf\ufffd.c", "file")
    assert repo[found.id].data == b"int x;\n"
    with pytest.raises(NotFound):
        find_entry(tree, ("dir\ufffd", "caf\ufffd.h"))


def test_names_that_show_alike_are_refused_not_guessed(tmp_path: Path) -> None:
    """Two names differing only in bytes that are not UTF-8 are INVALID_REQUEST by that name."""
    names = (b"caf\xe9.c", b"caf\xe8.c")
    repo, head = make_repo(tmp_path / "repo", {os.fsdecode(n): n.decode("latin-1") for n in names})
    tree = repo[head].peel(pygit2.Commit).tree
    with pytest.raises(InvalidRequest) as error:
        find_entry(tree, ("caf\ufffd.c",))
    assert error.value.details == {"field": "path", "reason": "ambiguous name"}


def test_a_shown_path_gives_back_the_bytes_git_stores(tmp_path: Path) -> None:
    """The stored bytes of a path shown with U+FFFD are its names' own; other paths, and
    names that show alike, give their UTF-8."""
    files = {os.fsdecode(raw): "x\n" for raw in (b"dir\xff/caf\xe9.c", b"e\xe9", b"e\xe8")}
    repo, head = make_repo(tmp_path / "repo", {**files, "plain/\u00e9.txt": "y\n"})
    assert stored_path(repo, head, "dir\ufffd/caf\ufffd.c") == b"dir\xff/caf\xe9.c"
    assert stored_path(repo, head, "plain/\u00e9.txt") == "plain/\u00e9.txt".encode()
    assert stored_path(repo, head, "e\ufffd") == "e\ufffd".encode()
    assert stored_path(repo, head, "dir\ufffd/nope\ufffd") == "dir\ufffd/nope\ufffd".encode()


@given(st.binary(max_size=12))
def test_shown_names_are_text_any_message_can_carry(raw: bytes) -> None:
    """Whatever the bytes, the shown name encodes as UTF-8; UTF-8 names show unchanged."""
    shown = path_text(raw)
    shown.encode("utf-8")
    try:
        assert shown == raw.decode("utf-8")
    except UnicodeDecodeError:
        assert "\ufffd" in shown


@pytest.mark.parametrize(
    ("link", "target", "resolved"),
    [
        ("a/link", "b.txt", "a/b.txt"),
        ("a/b/link", "../c", "a/c"),
        ("link", "./src/./app.py", "src/app.py"),
        ("a/link", "../../etc/passwd", None),
        ("link", "/etc/passwd", None),
        ("link", "..", None),
        ("a/link", "..", None),
        ("link", "", None),
        ("a/link", "b\\c", "a/b\\c"),
    ],
)
def test_link_targets_resolve_only_inside_the_tree(
    link: str, target: str, resolved: str | None
) -> None:
    """A target resolves to an in-tree path by string arithmetic, or to None if it leaves."""
    assert resolve_link_target(link, target) == resolved
