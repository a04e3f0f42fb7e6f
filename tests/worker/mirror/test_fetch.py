"""Tests for clone, fetch and the default branch of a mirror."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest

from tests.support.cache import SAMPLE_FILES
from tests.support.gateways import free_port
from tests.support.gitrepos import commit, init_repo
from worker.config import RepoEntry
from worker.errors import SyncError
from worker.mirror.fetch import clone, default_ref, fetch


def source_repo(path: Path, *branches: str) -> pygit2.Repository:
    """A repository with `main` (its HEAD), a tag, and each of `branches` at its first commit."""
    repo = init_repo(path)
    first = commit(repo, SAMPLE_FILES, message="first")
    commit(repo, {"sample/extra.py": "def extra():\n    return 1\n"}, message="second")
    repo.references.create("refs/tags/v1", pygit2.Oid(hex=first))
    for branch in branches:
        repo.references.create(f"refs/heads/{branch}", pygit2.Oid(hex=first))
    return repo


def entry_of(source: Path) -> RepoEntry:
    return RepoEntry(name="acme/tool", url=str(source))


@pytest.fixture
def git_daemon(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """`git daemon` serving the repositories under a directory: (directory, base URL)."""
    served = tmp_path / "served"
    served.mkdir()
    port = free_port()
    daemon = subprocess.Popen(
        [
            "git", "daemon", "--reuseaddr", "--export-all", "--verbose",
            f"--base-path={served}", "--listen=127.0.0.1", f"--port={port}",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert daemon.stderr is not None
    for line in daemon.stderr:
        if "Ready to rumble" in line:
            break
    else:
        raise RuntimeError(f"git daemon did not start ({daemon.wait()})")
    yield served, f"git://127.0.0.1:{port}"
    daemon.terminate()
    daemon.wait(timeout=30)
    daemon.stderr.close()


def test_a_clone_is_a_bare_mirror_of_every_branch_and_tag(tmp_path: Path) -> None:
    """A clone holds every branch and tag of the remote, and the count of objects it got."""
    source = source_repo(tmp_path / "src", "feature")
    repo, received = clone(entry_of(tmp_path / "src"), tmp_path / "mirror" / "tool.git", None)
    assert repo.is_bare
    assert set(repo.references) == {"refs/heads/main", "refs/heads/feature", "refs/tags/v1"}
    assert repo.references["refs/heads/main"].target == source.head.target
    assert received == len(list(source.odb))


def test_a_failed_clone_leaves_nothing_behind(tmp_path: Path) -> None:
    """A clone that fails names the repository and leaves no directory, not even a staged one."""
    (tmp_path / "empty").mkdir()
    with pytest.raises(SyncError, match="acme/tool: cannot fetch"):
        clone(entry_of(tmp_path / "empty"), tmp_path / "mirror" / "tool.git", None)
    assert list((tmp_path / "mirror").iterdir()) == []


def test_a_fetch_brings_new_commits_prunes_gone_branches_and_follows_a_moved_url(
    tmp_path: Path,
) -> None:
    """A fetch brings what the remote gained, drops branches it deleted, and fetches from the
    entry's URL when the remote moved."""
    source = source_repo(tmp_path / "src", "feature")
    repo, _ = clone(entry_of(tmp_path / "src"), tmp_path / "mirror" / "tool.git", None)
    newer = commit(source, {"sample/third.py": "x = 3\n"}, message="third")
    source.references.delete("refs/heads/feature")
    (tmp_path / "src").rename(tmp_path / "moved")
    assert fetch(entry_of(tmp_path / "moved"), repo, None) > 0
    assert repo.remotes["origin"].url == str(tmp_path / "moved")
    assert set(repo.references) == {"refs/heads/main", "refs/tags/v1"}
    assert str(repo.references["refs/heads/main"].target) == newer


def test_the_default_branch_is_the_remotes_head(tmp_path: Path) -> None:
    """The remote's HEAD names the default branch, and the mirror's HEAD is set to it."""
    source = source_repo(tmp_path / "src", "feature")
    source.set_head("refs/heads/feature")
    repo, _ = clone(entry_of(tmp_path / "src"), tmp_path / "mirror" / "tool.git", None)
    assert default_ref(entry_of(tmp_path / "src"), repo) == "refs/heads/feature"
    assert repo.head.name == "refs/heads/feature"


@pytest.mark.parametrize(
    ("branches", "expected"),
    [
        (("main", "master", "dev"), "refs/heads/main"),
        (("master", "dev"), "refs/heads/master"),
        (("dev", "beta"), "refs/heads/beta"),
    ],
)
def test_without_a_remote_head_main_then_master_then_the_first_branch_is_the_default(
    tmp_path: Path, branches: tuple[str, ...], expected: str
) -> None:
    """A remote whose HEAD names no branch it has gets main, else master, else the first by
    name."""
    source = source_repo(tmp_path / "src", *[b for b in branches if b != "main"])
    if "main" not in branches:
        source.references.delete("refs/heads/main")
    source.set_head("refs/heads/gone")
    repo, _ = clone(entry_of(tmp_path / "src"), tmp_path / "mirror" / "tool.git", None)
    assert default_ref(entry_of(tmp_path / "src"), repo) == expected


def test_a_remote_without_branches_has_no_default(tmp_path: Path) -> None:
    """A remote with only tags is refused: there is no branch to follow."""
    source = source_repo(tmp_path / "src")
    source.references.delete("refs/heads/main")
    source.set_head("refs/heads/gone")
    repo, _ = clone(entry_of(tmp_path / "src"), tmp_path / "mirror" / "tool.git", None)
    with pytest.raises(SyncError, match="has no branches"):
        default_ref(entry_of(tmp_path / "src"), repo)


def test_a_fetch_reports_progress_before_the_pack_arrives(
    git_daemon: tuple[Path, str],
) -> None:
    """A fetch says at once what it fetches, then relays the server's own progress (counting
    and compressing, which can take long for a large repository) before the transfer's."""
    served, base_url = git_daemon
    source = source_repo(served / "tool")
    for i in range(40):  # objects enough for the server to count and compress
        commit(source, {f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n"}, message=f"m{i}")
    messages: list[str] = []
    clone(
        RepoEntry(name="acme/tool", url=f"{base_url}/tool"),
        served.parent / "mirror" / "tool.git",
        lambda _name, message: messages.append(message),
    )
    assert messages[0] == f"fetching {base_url}/tool"
    receiving = next(i for i, m in enumerate(messages) if m.startswith("receiving objects"))
    remote = [m for m in messages[:receiving] if m.startswith("remote: ")]
    assert any(m.startswith("remote: Counting objects:") for m in remote), messages
    assert any(m.endswith("done.") for m in remote), messages
    assert messages[-1].startswith("receiving objects 100%")
    assert all("\r" not in m and "\n" not in m for m in messages)
