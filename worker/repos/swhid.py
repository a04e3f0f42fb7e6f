"""Software Heritage identifiers for excerpts, computed offline from git object ids.

A git blob id is a SWHID content id and a git commit id a revision id, so
`swh:1:cnt:<blob>;origin=<url>;anchor=swh:1:rev:<commit>;path=/<path>;lines=<a>-<b>`
cites an excerpt in a form anyone can check against the repository or the archive.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

# The SWHID spec escapes ';' and '%' in qualifier values, once: an origin is written as the
# URL it is (the reference implementation reads it back with one unquote), a path with the
# characters of a URL path left as they are.
_SAFE_PATH = "/!$&'()*+,=:@-._~"


def origin_url(url: str) -> str:
    """The origin a repository URL stands for: credentials dropped, local paths as file:// URLs."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme in ("", "file") and not parsed.netloc:
        # Not Path.as_uri(): it percent-encodes, and the qualifier would then be encoded twice.
        return "file://" + str(Path(parsed.path or url).absolute())
    if "@" in parsed.netloc:
        parsed = parsed._replace(netloc=parsed.netloc.rsplit("@", 1)[1])
    return urllib.parse.urlunsplit(parsed)


def content_swhid(
    *, blob: str, origin: str, commit: str, path: str | bytes, start_line: int, end_line: int
) -> str:
    """The SWHID of lines `start_line`..`end_line` of `path` (blob `blob`) at `commit`.

    `path` as the bytes git stores when they are not UTF-8 (`tree_paths.stored_path`): the
    qualifier percent-encodes those bytes, not the text they are shown as.
    """
    rooted = b"/" + path if isinstance(path, bytes) else "/" + path
    lines = f"{start_line}" if start_line == end_line else f"{start_line}-{end_line}"
    return ";".join(
        (
            f"swh:1:cnt:{blob}",
            f"origin={_escape_qualifier(origin)}",
            f"anchor=swh:1:rev:{commit}",
            f"path={urllib.parse.quote(rooted, safe=_SAFE_PATH)}",
            f"lines={lines}",
        )
    )


def _escape_qualifier(value: str) -> str:
    """A qualifier value with ';' and '%' percent-encoded (and nothing else)."""
    return value.replace("%", "%25").replace(";", "%3B")
