"""The license report: an SPDX 2.3 tag-value document of the head, per directory and per file.

Each file's license is its SPDX-License-Identifier header, else the license files nearest
above it (the product's one rule, `worker.licenses`). A directory's license is the one most
of its own files have, and the document lists a directory where that changes from its parent
or where license files sit; a file is listed where its license differs from its directory's,
and every license file is listed as a source. Expressions are compared normalised
(`GPL-2.0` is `GPL-2.0-only`); one that is no valid SPDX expression becomes a `LicenseRef-`
with the text as written.

A document larger than the server excerpts (`[server] max_blob_bytes`) could not be read with
code.read, so its file entries then continue in part documents that the first one names as
external documents with their SHA1.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from license_expression import ExpressionError, Licensing, get_spdx_licensing

from contracts.docs import DOC_PATHS
from contracts.types import NO_LICENSE
from worker.docs.source import BLOB_MODES, DocSource
from worker.licenses import LicenseInfo, spdx_header
from worker.licenses.header import HEADER_SCAN_BYTES
from worker.licenses.identify import is_license_file_name
from worker.repos.swhid import origin_url
from worker.service.server import service_version

REPORT_PATH: Final = DOC_PATHS["license_report"]
HEADER_SOURCE: Final = "its SPDX-License-Identifier header"
PART_MARGIN: Final = 4096
"""Room kept under `max_blob_bytes` for a part's own head."""
_REF_CHARS: Final = re.compile(r"[^A-Za-z0-9.-]+")


@functools.cache
def _licensing() -> Licensing:
    return get_spdx_licensing()


@dataclass(frozen=True, slots=True)
class FileLicense:
    """What the report knows of one file."""

    path: str
    sha1: str
    header: str | None
    """The expression its header declares, normalised."""
    concluded: str
    """Its license: the header's, else its directory's license files', else NOASSERTION."""
    source: str


class Expressions:
    """Normalises expressions; those that are no valid SPDX become LicenseRef-s, kept here."""

    def __init__(self) -> None:
        self.extracted: dict[str, str] = {}

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one per report
    def normal(self, expression: str) -> str:
        """`expression` as SPDX writes it, or a LicenseRef- standing for it."""
        try:
            info = _licensing().validate(expression)
            if not info.errors and not info.invalid_symbols:
                return str(_licensing().parse(expression).render())
        except ExpressionError:
            pass
        ref = "LicenseRef-repo-reader-" + (_REF_CHARS.sub("-", expression).strip("-") or "x")
        self.extracted[ref] = expression
        return ref


def _text(value: str) -> str:
    return "<text>" + value.replace("</text>", "</ text>") + "</text>"


def _directory(path: str) -> str:
    return path.rpartition("/")[0]


def _parent(directory: str) -> str | None:
    return None if not directory else directory.rpartition("/")[0]


def render_license_report(source: DocSource) -> dict[str, str]:
    """The report (its path and text), with parts when it would be larger than the server
    excerpts."""
    expressions = Expressions()
    nearest: dict[str, LicenseInfo | None] = {}
    files: list[FileLicense] = []
    for entry in source.files:
        if entry.mode not in BLOB_MODES:
            continue
        data = source.data(entry.blob)
        header = spdx_header(data[:HEADER_SCAN_BYTES])
        directory = _directory(entry.path)
        if directory not in nearest:
            nearest[directory] = source.licenses.for_directory(source.tree, directory)
        declared = nearest[directory]
        if header is not None:
            concluded, why = expressions.normal(header), HEADER_SOURCE
        elif declared is not None:
            concluded, why = expressions.normal(declared.spdx), f"license file {declared.source}"
        else:
            concluded, why = NO_LICENSE, "no header and no license file above it"
        files.append(
            FileLicense(
                path=entry.path,
                sha1=hashlib.sha1(data, usedforsecurity=False).hexdigest(),
                header=expressions.normal(header) if header is not None else None,
                concluded=concluded,
                source=why,
            )
        )
    by_directory: dict[str, Counter[str]] = {}
    for found in files:
        by_directory.setdefault(_directory(found.path), Counter())[found.concluded] += 1
    directory_license = {d: _most_common(c) for d, c in by_directory.items()}
    directory_lines = _directory_lines(directory_license, by_directory, nearest)
    listed = [
        f
        for f in files
        if f.concluded != directory_license[_directory(f.path)]
        or is_license_file_name(f.path.rpartition("/")[2])
    ]
    entries = [_file_entry(i, f) for i, f in enumerate(listed, start=1)]
    return _documents(source, expressions, directory_lines, entries, len(files))


def _most_common(counts: Counter[str]) -> str:
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def _directory_lines(
    licenses: dict[str, str],
    counts: dict[str, Counter[str]],
    nearest: dict[str, LicenseInfo | None],
) -> list[str]:
    """One line per directory worth naming: the root, where the license changes from the
    nearest directory above with files, and where license files are."""
    lines = []
    for directory in sorted(licenses):
        above = _parent(directory)
        while above is not None and above not in licenses:
            above = _parent(above)
        declared = nearest.get(directory)
        holds_license_files = declared is not None and any(
            _directory(path.strip()) == directory for path in declared.source.split(",")
        )
        if above is not None and licenses[above] == licenses[directory] and not holds_license_files:
            continue
        total = sum(counts[directory].values())
        agree = counts[directory][licenses[directory]]
        why = f"{agree} of its {total} files"
        if declared is not None:
            why += f"; license files above or in it: {declared.source} ({declared.spdx})"
        lines.append(f"./{directory or '.'}: {licenses[directory]} ({why})")
    return lines


def _file_entry(number: int, found: FileLicense) -> str:
    return "\n".join(
        (
            f"FileName: ./{found.path}",
            f"SPDXID: SPDXRef-File-{number}",
            f"FileChecksum: SHA1: {found.sha1}",
            f"LicenseConcluded: {found.concluded}",
            f"LicenseInfoInFile: {found.header or 'NONE'}",
            "FileCopyrightText: NOASSERTION",
            f"FileComment: {_text('concluded from ' + found.source)}",
        )
    )


def _download_location(source: DocSource) -> str:
    scheme = urlsplit(source.url).scheme
    if scheme in ("http", "https", "ssh", "git"):
        return f"git+{origin_url(source.url)}@{source.commit}"
    return "NOASSERTION"


def _namespace(source: DocSource, part: int) -> str:
    suffix = "" if part == 1 else f"/part-{part}"
    return f"https://spdx.org/spdxdocs/repo-reader/{source.name}/{source.commit}{suffix}"


def _head(source: DocSource, part: int, comment: str, refs: list[str]) -> list[str]:
    owner_name = source.name.replace("/", "-")
    name = f"{owner_name}-licenses" + ("" if part == 1 else f"-part-{part}")
    return [
        "# SPDX-License-Identifier: CC0-1.0",
        f"# The licenses of {source.name} at {source.commit}, by the repo-reader docs engine.",
        "SPDXVersion: SPDX-2.3",
        "DataLicense: CC0-1.0",
        "SPDXID: SPDXRef-DOCUMENT",
        f"DocumentName: {name}",
        f"DocumentNamespace: {_namespace(source, part)}",
        *refs,
        f"Creator: Tool: repo-reader-{service_version()}",
        f"Created: {source.generated_at:%Y-%m-%dT%H:%M:%SZ}",
        f"DocumentComment: {_text(comment)}",
        "",
    ]


def _package(source: DocSource, comment: str) -> list[str]:
    root = source.root_license
    declared = root.spdx if root is not None else "NOASSERTION"
    about = (
        f"declared by the license files at the root: {root.source}"
        if root is not None
        else "no license file at the root was identified"
    )
    return [
        f"PackageName: {source.name}",
        "SPDXID: SPDXRef-Package",
        f"PackageVersion: {source.commit}",
        f"PackageDownloadLocation: {_download_location(source)}",
        "FilesAnalyzed: true",
        "PackageLicenseConcluded: NOASSERTION",
        f"PackageLicenseDeclared: {declared}",
        f"PackageLicenseComments: {_text(about)}",
        "PackageCopyrightText: NOASSERTION",
        f"PackageComment: {_text(comment)}",
        "",
    ]


def _tail(expressions: Expressions) -> list[str]:
    lines = ["Relationship: SPDXRef-DOCUMENT DESCRIBES SPDXRef-Package"]
    for ref, written in sorted(expressions.extracted.items()):
        lines += [
            "",
            f"LicenseID: {ref}",
            f"ExtractedText: {_text('Declared as written: ' + written)}",
            f"LicenseName: {written}",
        ]
    return lines


def _documents(
    source: DocSource,
    expressions: Expressions,
    directory_lines: list[str],
    entries: list[str],
    n_files: int,
) -> dict[str, str]:
    budget = source.config.server.max_blob_bytes - PART_MARGIN
    directories = "Licenses by directory (a directory not named has its parent's):\n" + "\n".join(
        directory_lines
    )
    tail = "\n".join(_tail(expressions))
    about = (
        f"{n_files} files; {len(entries)} listed: every license file, and each file whose "
        "license differs from its directory's. A file's license is its SPDX-License-"
        "Identifier header, else the license files nearest above it."
    )
    fixed = len("\n".join(_head(source, 1, about, []) + _package(source, directories))) + len(tail)
    chunks: list[list[str]] = [[]]
    used = fixed
    for entry in entries:
        if used + len(entry) + 2 > budget and chunks[-1]:
            chunks.append([])
            used = 2 * len(tail) + 4096
        chunks[-1].append(entry)
        used += len(entry) + 2
    parts: dict[str, str] = {}
    refs = []
    for number, chunk in enumerate(chunks[1:], start=2):
        comment = f"Part {number} of {len(chunks)} of the license report of {source.name}."
        text = "\n".join(
            _head(source, number, comment, [])
            + _package(source, comment)
            + ["\n\n".join(chunk), "", tail, ""]
        )
        path = f"license-report.part-{number}.spdx"
        parts[path] = text
        sha1 = hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()
        refs.append(
            f"ExternalDocumentRef: DocumentRef-part-{number} {_namespace(source, number)} "
            f"SHA1: {sha1}"
        )
    if len(chunks) > 1:
        about += (
            f" The file entries continue in {len(chunks) - 1} part documents: {', '.join(parts)}."
        )
    main = "\n".join(
        _head(source, 1, about, refs)
        + _package(source, directories)
        + ["\n\n".join(chunks[0]), "", tail, ""]
    )
    return {REPORT_PATH: main, **parts}
