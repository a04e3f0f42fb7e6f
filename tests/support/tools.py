"""A mirrored cache for the agent-tool tests: a repository with history, odd files and neighbours.

`acme/widgets` has six commits over 29 days (conventional and free-form messages), a
binary file, a Latin-1 file, a file above the blob bound, a very long line, and symlinks
pointing inside and outside the tree. Around it: an unlicensed repository, one denied by
policy, two sharing a bare name, and one registered but never synced.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tests.support.cache import MirroredCache
from tests.support.gitrepos import MIT_LICENSE, Content, Symlink, commit, init_repo, make_repo

DAY = 86_400
MAX_BLOB_BYTES = 20_000

TOOLS_CONFIG = f"""
[server]
max_blob_bytes = {MAX_BLOB_BYTES}

[policy]
deny = ["acme/secret*"]

[tools]
search_max_results = 30
read_default_lines = 20
read_max_lines = 50
read_max_chars = 1000
list_default_entries = 20
list_max_entries = 50
history_max_files_per_commit = 3
history_max_message_chars = 60
churn_max_depth = 3
"""

CORE_PY = """\"\"\"Request handling.\"\"\"

import json


def handle_request(request):
    \"\"\"Answer one request.\"\"\"
    payload = json.loads(request.body)
    return dispatch(payload)


def dispatch(payload):
    return handle_request_later(payload)
"""

UTIL_PY = """from widgets.core import handle_request


def retry(request, attempts=3):
    for _ in range(attempts):
        result = handle_request(request)
        if result is not None:
            return result
    return None
"""

LEGACY_C = """#include <stdio.h>

int handle_request(const char *line)
{
\treturn puts(line);
}
"""

BASE_FILES: dict[str, Content] = {
    "LICENSE": MIT_LICENSE,
    "README.md": "# Widgets\n\nCall handle_request for each request.\n",
    "src/widgets/__init__.py": '"""Widgets."""\n',
    "src/widgets/core.py": CORE_PY,
    "src/widgets/util.py": UTIL_PY,
    "lib/legacy.c": LEGACY_C,
    "assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00handle_request\x00",
    "notes/latin1.txt": b"caf\xe9 handle_request\nna\xefve\n",
    "big/data.txt": "handle_request filler line\n" * 1000,
    "hostile.txt": "a" * 5000 + "b\n" + "a" * 5000 + "\n",
    "long.txt": "".join(f"line {n:03d} " + "x" * 40 + "\n" for n in range(1, 101)),
    "link_inside": Symlink("src/widgets/core.py"),
    "link_outside": Symlink("../../../etc/passwd"),
    "odd/new\nline.txt": "a name with a line break, as git allows\n",
}

NOT_UTF8_PATH = os.fsdecode(b"caf\xe9/men\xfc.c")
"""A path in Latin-1, as older tools wrote them: requests and answers show it as NOT_UTF8_SHOWN."""
NOT_UTF8_SHOWN = "caf\ufffd/men\ufffd.c"
NAMES_FILES: dict[str, Content] = {
    "LICENSE": MIT_LICENSE,
    NOT_UTF8_PATH: "int caf(void) { return 1; }\n",
}

HISTORY: list[tuple[int, str, dict[str, Content | None]]] = [
    (10, "feat(parser): add a streaming parser", {
        "src/widgets/parser.py": "def parse():\n    pass\n"}),
    (20, "Fix crash on empty input\n\nThe parser raised on b''.", {
        "src/widgets/parser.py": "def parse(data=b''):\n    return data or None\n"}),
    (25, "docs: describe the parser", {"docs/parser.md": "# Parser\n\nIt parses.\n"}),
    (28, "Update tests", {"tests/test_parser.py": "def test_parse():\n    assert True\n"}),
    (29, "Rename helpers and move them into one place, which is a long message indeed", {
        "src/widgets/helpers/a.py": "A = 1\n", "src/widgets/helpers/b.py": "B = 2\n",
        "src/widgets/helpers/c.py": "C = 3\n", "src/widgets/helpers/d.py": "D = 4\n",
        "lib/helpers.h": "int helper(void);\n"}),
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class ToolCache:
    """The mirrored cache and the commits of `acme/widgets`."""

    cache: MirroredCache
    initial: str
    head: str
    commits: tuple[str, ...]
    """Every commit of acme/widgets, oldest first."""


def build_tool_cache(root: Path) -> ToolCache:
    """Build the sources under `root/sources`, then mirror them into `root/cache`."""
    sources = root / "sources"
    repo = init_repo(sources / "widgets")
    commits = [commit(repo, BASE_FILES, message="initial import", tick=0)]
    for days, message, files in HISTORY:
        commits.append(commit(repo, files, message=message, tick=days * DAY))
    (root / "cache").mkdir()
    cache = MirroredCache(root / "cache")
    cache.set_config(TOOLS_CONFIG)
    cache.add("acme/widgets", sources / "widgets")
    make_repo(sources / "unlicensed", {"main.py": "handle_request = 1\n"})
    cache.add("acme/unlicensed", sources / "unlicensed")
    make_repo(sources / "secret", {"LICENSE": MIT_LICENSE, "s.py": "x = 1\n"})
    cache.add("acme/secret-sauce", sources / "secret")
    for owner in ("acme", "other"):
        make_repo(sources / f"dup-{owner}", {"LICENSE": MIT_LICENSE, "d.py": "d = 1\n"})
        cache.add(f"{owner}/dup", sources / f"dup-{owner}")
    names = init_repo(sources / "names")
    commit(names, NAMES_FILES, message="initial import", tick=0)
    commit(names, {NOT_UTF8_PATH: "int caf(void) { return 2; }\n"}, message="edit", tick=DAY)
    cache.add("acme/names", sources / "names")
    cache.mirror.add("acme/pending", str(sources / "widgets"))
    return ToolCache(cache=cache, initial=commits[0], head=commits[-1], commits=tuple(commits))
