"""Where the image build gets Debian packages: the machine's own APT configuration.

`sandbox/build-images.sh` builds a base image with debootstrap when no public one is at
hand; the Debian mirror it gives debootstrap is the one this machine's APT already uses
(`/etc/apt/sources.list`, `sources.list.d/*.list` and deb822 `*.sources`), so a machine
behind a proxy or a local mirror builds from it, and nothing here names a host.
`DEBIAN_MIRROR` overrides it. (Python packages need nothing of the kind: the wheelhouse is
built by the host's pip, which reads its own configuration: `pip config list`,
`PIP_INDEX_URL`.)

    python -m sandbox.package_sources debian-mirror [--codename bookworm] [--apt-dir DIR]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

DEBIAN_SUITES: Final = frozenset(
    {
        "buster", "bullseye", "bookworm", "trixie", "forky", "duke", "sid",
        "oldoldstable", "oldstable", "stable", "testing", "unstable",
    }
)  # fmt: skip
"""Suite names of Debian's main archive, by which its entries are told from other vendors'
(a mirror of one serves every release); `-updates`, `-security`, `-backports` are not it."""

MIRROR_SCHEMES: Final = ("http://", "https://", "file://")
"""What debootstrap can fetch from (a `cdrom:` entry cannot serve it)."""


@dataclass(frozen=True, slots=True)
class AptSource:
    """One entry of the APT configuration."""

    types: tuple[str, ...]
    uris: tuple[str, ...]
    suites: tuple[str, ...]
    components: tuple[str, ...]
    enabled: bool = True


def parse_one_line(text: str) -> list[AptSource]:
    """The entries of a `sources.list` file: `deb [options] URI SUITE [COMPONENT...]`."""
    entries = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        line = re.sub(r"\[[^]]*\]", " ", line)  # [arch=amd64 signed-by=...]
        words = line.split()
        if len(words) >= 3:
            entries.append(AptSource((words[0],), (words[1],), (words[2],), tuple(words[3:])))
    return entries


def parse_deb822(text: str) -> list[AptSource]:
    """The entries of a deb822 `.sources` file: stanzas of `Field: value` lines, blank-line
    separated, a field continued on indented lines, `#` lines comments."""
    entries = []
    for stanza in re.split(r"\n[ \t]*\n", text):
        fields: dict[str, str] = {}
        name = None
        for line in stanza.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            if line[0] in " \t" and name is not None:
                fields[name] += " " + line.strip()
                continue
            name, _, value = line.partition(":")
            name = name.strip().lower()
            fields[name] = value.strip()
        if "uris" in fields:
            entries.append(
                AptSource(
                    tuple(fields.get("types", "").split()),
                    tuple(fields["uris"].split()),
                    tuple(fields.get("suites", "").split()),
                    tuple(fields.get("components", "").split()),
                    enabled=fields.get("enabled", "yes").lower() not in ("no", "false", "0"),
                )
            )
    return entries


def read_sources(apt_dir: Path = Path("/etc/apt")) -> list[AptSource]:
    """Every entry of the APT configuration under `apt_dir`, in the order APT reads it."""
    entries = []
    main_list = apt_dir / "sources.list"
    if main_list.is_file():
        entries += parse_one_line(main_list.read_text(errors="replace"))
    parts = apt_dir / "sources.list.d"
    for path in sorted(parts.iterdir()) if parts.is_dir() else ():
        if path.suffix == ".list":
            entries += parse_one_line(path.read_text(errors="replace"))
        elif path.suffix == ".sources":
            entries += parse_deb822(path.read_text(errors="replace"))
    return entries


def _debian_archives(sources: Sequence[AptSource]) -> Iterator[tuple[AptSource, str]]:
    for source in sources:
        if not source.enabled or "deb" not in source.types or "main" not in source.components:
            continue
        for uri in source.uris:
            if uri.startswith(MIRROR_SCHEMES):
                yield source, uri.rstrip("/")


def debian_mirror(sources: Sequence[AptSource], codename: str = "bookworm") -> str | None:
    """The mirror of Debian's main archive the configuration uses: one serving `codename`
    itself if any, else one serving another Debian release; None if it names none."""
    archives = list(_debian_archives(sources))
    for source, uri in archives:
        if codename in source.suites:
            return uri
    for source, uri in archives:
        if DEBIAN_SUITES.intersection(source.suites):
            return uri
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Print this machine's Debian mirror; exit 1, saying what to do, if it has none."""
    parser = argparse.ArgumentParser(prog="python -m sandbox.package_sources")
    commands = parser.add_subparsers(dest="command", required=True)
    mirror = commands.add_parser("debian-mirror", help="the Debian mirror APT is configured with")
    mirror.add_argument("--codename", default="bookworm")
    mirror.add_argument("--apt-dir", type=Path, default=Path("/etc/apt"))
    args = parser.parse_args(argv)
    found = debian_mirror(read_sources(args.apt_dir), args.codename)
    if found is None:
        print(
            f"no Debian mirror in the APT configuration under {args.apt_dir}; "
            "set DEBIAN_MIRROR to one",
            file=sys.stderr,
        )
        return 1
    print(found)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
