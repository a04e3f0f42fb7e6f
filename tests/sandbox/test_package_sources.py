"""The Debian mirror of the image build comes from the machine's APT configuration, read from
sample configuration trees; no host is named in the build's files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sandbox.package_sources import debian_mirror, main, read_sources

ROOT = Path(__file__).resolve().parents[2]

DEB822 = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://mirror.example.net/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example.net/debian-security
Suites: bookworm-security
Components: main
"""

VENDOR = """\
Types: deb
URIs: https://vendor.example.com/node_20.x
Suites: nodistro
Components: main
"""


def apt_tree(root: Path, files: dict[str, str]) -> Path:
    """An /etc/apt-like directory holding `files`."""
    for name, text in files.items():
        path = root / "apt" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "apt"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # deb822, with comments inside a stanza (Debian 12's own layout); vendors ignored
        (
            {
                "sources.list.d/aa-vendor.sources": VENDOR,
                "sources.list.d/debian.sources": DEB822,
            },
            "http://mirror.example.net/debian",
        ),
        # one-line format with options, a deb-src line and a commented-out line first
        (
            {
                "sources.list": (
                    "# deb http://old.example.org/debian bookworm main\n"
                    "deb-src http://src.example.org/debian bookworm main\n"
                    "deb [arch=amd64 signed-by=/k.gpg] https://proxy.example.org/debian/ "
                    "bookworm main contrib\n"
                )
            },
            "https://proxy.example.org/debian",
        ),
        # a host on trixie: its mirror serves bookworm too; the exact codename is preferred
        (
            {
                "sources.list": "deb http://a.example.org/debian trixie main\n",
                "sources.list.d/b.list": "deb file:///srv/mirror/debian bookworm main\n",
            },
            "file:///srv/mirror/debian",
        ),
        (
            {"sources.list": "deb http://a.example.org/debian trixie main\n"},
            "http://a.example.org/debian",
        ),
        # disabled, security-only, non-main or unreachable by debootstrap: none of them
        (
            {
                "sources.list.d/off.sources": DEB822.replace(
                    "Types: deb\n#", "Types: deb\nEnabled: no\n#"
                ).split("\n\n")[0],
                "sources.list": (
                    "deb http://security.example.org/debian-security bookworm-security main\n"
                    "deb http://c.example.org/debian bookworm contrib\n"
                    "deb cdrom:[Debian 12]/ bookworm main\n"
                ),
                "sources.list.d/x.list.disabled": "deb http://x.example/debian bookworm main\n",
            },
            None,
        ),
        # an Ubuntu machine names no Debian archive
        ({"sources.list": "deb http://archive.ubuntu.com/ubuntu jammy main\n"}, None),
    ],
)
def test_the_debian_mirror_is_the_machines_own(
    tmp_path: Path, files: dict[str, str], expected: str | None
) -> None:
    """The mirror is the first enabled `deb ... main` entry of Debian's archive, in APT's
    reading order, serving bookworm if one does; None when the configuration names none."""
    assert debian_mirror(read_sources(apt_tree(tmp_path, files))) == expected


def test_the_command_prints_it_or_says_what_to_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m sandbox.package_sources debian-mirror` prints the mirror (0), or exits 1
    naming DEBIAN_MIRROR."""
    found = apt_tree(tmp_path / "a", {"sources.list.d/debian.sources": DEB822})
    assert main(["debian-mirror", "--apt-dir", str(found)]) == 0
    assert capsys.readouterr().out == "http://mirror.example.net/debian\n"
    empty = apt_tree(tmp_path / "b", {"sources.list": "# nothing\n"})
    assert main(["debian-mirror", "--apt-dir", str(empty)]) == 1
    assert "DEBIAN_MIRROR" in capsys.readouterr().err


def test_the_build_names_no_package_host() -> None:
    """The image build's scripts and Containerfiles name no Debian mirror or package index."""
    hosts = re.compile(r"deb\.debian\.org|security\.debian\.org|pypi\.org|pythonhosted\.org")
    build_files = [
        ROOT / "Containerfile",
        ROOT / ".ci" / "run",
        *ROOT.joinpath("sandbox").glob("*.sh"),
        *ROOT.joinpath("sandbox").glob("*Containerfile"),
    ]
    assert len(build_files) >= 5
    assert [path.name for path in build_files if hosts.search(path.read_text())] == []
