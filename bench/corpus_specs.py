"""The pinned benchmark corpora: which archive, its sha256, and the commit ids it must give.

Changing a version means changing its sha256 and commit pins too; `python -m bench.corpora`
prints the new commit ids when a pin is left empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class PypiSdist:
    """A source distribution on PyPI."""

    project: str
    version: str
    filename: str
    sha256: str


@dataclass(frozen=True)
class DebianSource:
    """A Debian package that ships a source tarball (e.g. ``linux-source-6.1``)."""

    package: str
    version: str
    sha256: str
    tarball: str

    @property
    def filename(self) -> str:
        """The name ``apt-get download`` saves the package under."""
        return f"{self.package}_{self.version.replace(':', '%3a')}_all.deb"


@dataclass(frozen=True)
class FileEdit:
    """One deterministic change of the edited commit."""

    path: str
    action: Literal["append", "delete", "add"]
    text: str = ""


@dataclass(frozen=True)
class CorpusSpec:
    """A corpus: its source, pinned commit ids, and the edits of its second commit."""

    name: str
    owner: str
    source: PypiSdist | DebianSource
    base_commit: str = ""
    edits: tuple[FileEdit, ...] = ()
    edited_commit: str = ""


_DJANGO_EDITS = (
    FileEdit(
        "django/utils/text.py",
        "append",
        "\n\ndef collapse_blank_lines(value):\n"
        '    """Collapse runs of blank lines in a block of text into a single one."""\n'
        '    return re.sub(r"\\n{3,}", "\\n\\n", str(value))\n',
    ),
    FileEdit(
        "django/core/paginator.py",
        "append",
        "\n\ndef page_window(page, radius=2):\n"
        '    """Return the page numbers within `radius` of the given page."""\n'
        "    low = max(1, page.number - radius)\n"
        "    high = min(page.paginator.num_pages, page.number + radius)\n"
        "    return list(range(low, high + 1))\n",
    ),
    FileEdit(
        "django/http/response.py",
        "append",
        "\n\ndef no_store(response):\n"
        '    """Mark a response as never to be stored by any cache."""\n'
        '    response.headers["Cache-Control"] = "no-store"\n'
        "    return response\n",
    ),
    FileEdit("django/utils/lorem_ipsum.py", "delete"),
    FileEdit(
        "django/utils/backoff.py",
        "add",
        '"""Retry delays for flaky operations."""\n\n'
        "import random\n\n\n"
        "def exponential_backoff_with_jitter(attempt, base=0.1, cap=30.0, rng=random):\n"
        '    """Return how long to sleep before retry number `attempt` (full jitter)."""\n'
        "    return rng.uniform(0, min(cap, base * 2**attempt))\n",
    ),
)

_LINUX_EDITS = (
    FileEdit(
        "lib/string.c",
        "append",
        "\n/* Count the bytes equal to c in the first n bytes of s. */\n"
        "size_t memcount(const void *s, int c, size_t n)\n{\n"
        "\tconst unsigned char *p = s;\n\tsize_t count = 0;\n\n"
        "\twhile (n--)\n\t\tcount += *p++ == (unsigned char)c;\n"
        "\treturn count;\n}\nEXPORT_SYMBOL(memcount);\n",
    ),
    FileEdit(
        "kernel/sched/core.c",
        "append",
        "\n/* Report whether a task has been runnable but waiting for longer than limit_ns. */\n"
        "bool sched_task_starving(struct task_struct *p, u64 limit_ns)\n{\n"
        "\treturn task_on_rq_queued(p) && !task_current(task_rq(p), p) &&\n"
        "\t       p->sched_info.run_delay > limit_ns;\n}\n",
    ),
    FileEdit(
        "fs/namei.c",
        "append",
        "\n/* Return true if name is a single path component (no slash, not . or ..). */\n"
        "bool path_is_single_component(const char *name)\n{\n"
        '\treturn *name && !strchr(name, \'/\') && strcmp(name, ".") && strcmp(name, "..");\n'
        "}\n",
    ),
    FileEdit("lib/glob.c", "delete"),
    FileEdit(
        "lib/ring_checksum.c",
        "add",
        "// SPDX-License-Identifier: GPL-2.0\n"
        "/* Fletcher-16 checksum over a ring buffer that may wrap around. */\n"
        "#include <linux/types.h>\n#include <linux/export.h>\n\n"
        "u16 ring_fletcher16(const u8 *ring, size_t size, size_t head, size_t len)\n{\n"
        "\tu16 sum1 = 0, sum2 = 0;\n\n"
        "\twhile (len--) {\n"
        "\t\tsum1 = (sum1 + ring[head]) % 255;\n"
        "\t\tsum2 = (sum2 + sum1) % 255;\n"
        "\t\thead = (head + 1) % size;\n\t}\n"
        "\treturn (sum2 << 8) | sum1;\n}\nEXPORT_SYMBOL(ring_fletcher16);\n",
    ),
)

_SPECS = (
    CorpusSpec(
        name="django",
        owner="pypi",
        source=PypiSdist(
            project="django",
            version="6.1.3",
            filename="django-6.1.3.tar.gz",
            sha256="b5d2d9e35295065d13b1927b3f19a59bd119f737aa6299def14ccca1ae3c8c0d",
        ),
        base_commit="32335d7347f90d98ec1cd9cf6d476ef332945a7a",
        edits=_DJANGO_EDITS,
        edited_commit="2d10909167d84b6b7aa59231c2c890f3bc38f833",
    ),
    CorpusSpec(
        name="flask",
        owner="pypi",
        source=PypiSdist(
            project="flask",
            version="3.1.3",
            filename="flask-3.1.3.tar.gz",
            sha256="0ef0e52b8a9cd932855379197dd8f94047b359ca0a78695144304cb45f87c9eb",
        ),
        base_commit="b81f71315a65f2742562fe2e938b8b7b99232fe8",
    ),
    CorpusSpec(
        name="requests",
        owner="pypi",
        source=PypiSdist(
            project="requests",
            version="2.34.2",
            filename="requests-2.34.2.tar.gz",
            sha256="f288924cae4e29463698d6d60bc6a4da69c89185ad1e0bcc4104f584e960b9ed",
        ),
        base_commit="3ecb55554e76fabdea027923d7f6c4b55d2e83ba",
    ),
    CorpusSpec(
        name="click",
        owner="pypi",
        source=PypiSdist(
            project="click",
            version="8.5.1",
            filename="click-8.5.1.tar.gz",
            sha256="9bbfada76703fd1d784b83eea012e3e8c6a001a876543ef104fa56aaaeb072b4",
        ),
        base_commit="53d8f81f066f19d825dcb86ad7e7037f79b4f944",
    ),
    CorpusSpec(
        name="linux",
        owner="debian",
        source=DebianSource(
            package="linux-source-6.1",
            version="6.1.176-1",
            sha256="9305d1a151b8e83dcb88aa11361e7b9513f0c252bdf7f5647e4542762d99c094",
            tarball="usr/src/linux-source-6.1.tar.xz",
        ),
        base_commit="ea8c3bb28d5c52736b072acc1aaa93d091eeb159",
        edits=_LINUX_EDITS,
        edited_commit="c27b8d27670268f714c9a30657a843281755bdbf",
    ),
)

CORPORA: dict[str, CorpusSpec] = {spec.name: spec for spec in _SPECS}
