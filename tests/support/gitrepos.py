"""Builds real git repositories for tests with pygit2: deterministic ids, nested trees, symlinks."""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pygit2

SIGNATURE_TIME = 1_700_000_000


class Symlink(str):
    """A file content that is committed as a symbolic link to this target."""


Content = bytes | str | Symlink
Files = Mapping[str, Content]


def signature(offset: int = 0) -> pygit2.Signature:
    """A fixed author, `offset` seconds after a fixed moment, so commit ids repeat."""
    return pygit2.Signature("Test Author", "test@example.invalid", SIGNATURE_TIME + offset, 0)


def init_repo(path: Path, *, bare: bool = False) -> pygit2.Repository:
    """An empty repository at `path`."""
    return pygit2.init_repository(str(path), bare=bare, initial_head="main")


def _tree(
    repo: pygit2.Repository, files: Mapping[str, Content | None], base: pygit2.Tree | None
) -> pygit2.Oid:
    """A tree of `files` over `base`; a None content removes the path."""
    here: dict[str, Content | None] = {}
    below: dict[str, dict[str, Content | None]] = {}
    for path, content in files.items():
        head, sep, rest = path.partition("/")
        if sep:
            below.setdefault(head, {})[rest] = content
        else:
            here[head] = content
    builder = repo.TreeBuilder(base) if base is not None else repo.TreeBuilder()
    for name, content in here.items():
        if content is None:
            if base is not None and name in base:
                builder.remove(name)
        elif isinstance(content, Symlink):
            builder.insert(
                name, repo.create_blob(str(content).encode()), pygit2.enums.FileMode.LINK
            )
        else:
            data = content.encode() if isinstance(content, str) else content
            builder.insert(name, repo.create_blob(data), pygit2.enums.FileMode.BLOB)
    for name, subfiles in below.items():
        sub_base = None
        if base is not None and name in base:
            entry = base[name]
            sub_base = repo[entry.id] if entry.type_str == "tree" else None
        sub_id = _tree(repo, subfiles, sub_base)
        if len(repo[sub_id]) == 0:
            if base is not None and name in base:
                builder.remove(name)
            continue
        builder.insert(name, sub_id, pygit2.enums.FileMode.TREE)
    return builder.write()


def _is_utf8(path: str) -> bool:
    return not any("\udc80" <= char <= "\udcff" for char in path)


def _raw_tree(
    repo: pygit2.Repository, files: Mapping[str, Content | None], base: pygit2.Tree | None
) -> pygit2.Oid:
    """A tree of `files` over `base`, for paths that are not all UTF-8.

    pygit2's TreeBuilder takes names as UTF-8 text; its index takes paths as file names, so
    `os.fsdecode(raw)` commits the bytes `raw`.
    """
    index = pygit2.Index()
    if base is not None:
        index.read_tree(base)
    for path, content in files.items():
        if content is None:
            index.remove(path)
            continue
        mode = pygit2.enums.FileMode.LINK if isinstance(content, Symlink) else None
        data = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content
        index.add(
            pygit2.IndexEntry(path, repo.create_blob(data), mode or pygit2.enums.FileMode.BLOB)
        )
    return index.write_tree(repo)


def commit(
    repo: pygit2.Repository,
    files: Mapping[str, Content | None],
    *,
    message: str = "change",
    branch: str = "main",
    tick: int | None = None,
) -> str:
    """Commit `files` (None removes a path) on top of `branch`; returns the commit id.

    A path that is not UTF-8 is given as `os.fsdecode` of its bytes.
    """
    ref_name = f"refs/heads/{branch}"
    parent = repo.references[ref_name].peel(pygit2.Commit) if ref_name in repo.references else None
    base = parent.tree if parent else None
    tree = _tree(repo, files, base) if all(map(_is_utf8, files)) else _raw_tree(repo, files, base)
    when = signature(tick if tick is not None else _depth(parent))
    oid = repo.create_commit(ref_name, when, when, message, tree, [parent.id] if parent else [])
    return str(oid)


def _depth(commit_: pygit2.Commit | None) -> int:
    depth = 0
    while commit_ is not None:
        depth += 1
        commit_ = commit_.parents[0] if commit_.parents else None
    return depth


def make_repo(
    path: Path, files: Mapping[str, Content], *, message: str = "initial"
) -> tuple[pygit2.Repository, str]:
    """A new repository at `path` with one commit of `files` on `main`."""
    repo = init_repo(path)
    return repo, commit(repo, files, message=message)


MIT_LICENSE = """MIT License

Copyright (c) 2024 Test Author

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""

BSD_3_CLAUSE = """Copyright (c) 2024, Test Author

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:

1. Redistributions of source code must retain the above copyright notice, this
   list of conditions and the following disclaimer.

2. Redistributions in binary form must reproduce the above copyright notice,
   this list of conditions and the following disclaimer in the documentation
   and/or other materials provided with the distribution.

3. Neither the name of the copyright holder nor the names of its
   contributors may be used to endorse or promote products derived from
   this software without specific prior written permission.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE
DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE LIABLE
FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL
DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR
SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER
CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY,
OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
"""


def rewrite_loose_object(repo: pygit2.Repository, oid: pygit2.Oid, stored: bytes) -> None:
    """Replace what loose object `oid` holds with `stored` (its header and content), whatever
    its id says."""
    path = Path(repo.path) / "objects" / str(oid)[:2] / str(oid)[2:]
    path.chmod(0o644)
    path.write_bytes(zlib.compress(stored))


@contextmanager
def hashing_every_read() -> Iterator[None]:
    """libgit2 checks each object it loads against its id, as it does by default, until the
    block ends; after it, objects are read unhashed, as a process with a worker reads them
    (`worker.repos.layout.read_mirrored_objects_unhashed`)."""
    pygit2.settings.enable_strict_hash_verification(True)
    try:
        yield
    finally:
        pygit2.settings.enable_strict_hash_verification(False)
