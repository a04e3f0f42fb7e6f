"""Fetch and open the pinned archives of the benchmark corpora, from package registries only.

PyPI sdists come from the simple index (``PIP_INDEX_URL``, default pypi.org) over TLS with the
certificate bundle pip uses; Debian source packages come from ``apt-get download``. Every
archive is checked against its pinned sha256 before use.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import ssl
import subprocess
import tarfile
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from typing import IO

from bench.corpus_specs import DebianSource, PypiSdist

DEFAULT_INDEX_URL = "https://pypi.org/simple"

_CHUNK = 1 << 20


class CorpusError(Exception):
    """A corpus cannot be fetched, verified or reproduced."""


def _say(message: str) -> None:
    print(message, flush=True)


def sha256_of(path: Path) -> str:
    """Return the hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class _AnchorParser(HTMLParser):
    """Collect the ``href`` of every anchor on a PEP 503 simple-index page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.links.extend(value for key, value in attrs if key == "href" and value)


def _ssl_context() -> ssl.SSLContext:
    # Honour the certificate bundle pip is configured with (a proxy may re-sign TLS).
    cafile = os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
    if cafile is None and Path("/etc/ssl/certs/ca-certificates.crt").is_file():
        cafile = "/etc/ssl/certs/ca-certificates.crt"
    return ssl.create_default_context(cafile=cafile)


def _sdist_url(sdist: PypiSdist) -> str:
    index = os.environ.get("PIP_INDEX_URL", DEFAULT_INDEX_URL).rstrip("/")
    page_url = f"{index}/{sdist.project}/"
    with urllib.request.urlopen(page_url, context=_ssl_context(), timeout=60) as response:
        parser = _AnchorParser()
        parser.feed(response.read().decode("utf-8", "replace"))
    for href in parser.links:
        url = urllib.parse.urljoin(page_url, href.split("#", 1)[0])
        if urllib.parse.unquote(url.rsplit("/", 1)[-1]) == sdist.filename:
            return url
    raise CorpusError(f"{sdist.filename} is not listed on {page_url}")


def _download_sdist(sdist: PypiSdist, target: Path) -> None:
    url = _sdist_url(sdist)
    _say(f"  downloading {url}")
    partial = target.with_name(target.name + ".part")
    with (
        urllib.request.urlopen(url, context=_ssl_context(), timeout=300) as response,
        partial.open("wb") as out,
    ):
        shutil.copyfileobj(response, out, _CHUNK)
    partial.replace(target)


def _download_deb(source: DebianSource, downloads: Path) -> None:
    _say(f"  apt-get download {source.package}={source.version}")
    done = subprocess.run(
        ["apt-get", "download", f"{source.package}={source.version}"],
        cwd=downloads,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise CorpusError(
            f"apt-get download {source.package}={source.version} failed "
            f"(see `apt-cache policy {source.package}` for the versions available): "
            f"{done.stderr.strip()}"
        )


def fetch_archive(source: PypiSdist | DebianSource, downloads: Path) -> Path:
    """Return the verified archive of a source, downloading it if absent or corrupt."""
    downloads.mkdir(parents=True, exist_ok=True)
    target = downloads / source.filename
    if target.is_file() and sha256_of(target) == source.sha256:
        return target
    target.unlink(missing_ok=True)
    if isinstance(source, PypiSdist):
        _download_sdist(source, target)
    else:
        _download_deb(source, downloads)
    if not target.is_file():
        raise CorpusError(f"download of {source.filename} left no file in {downloads}")
    actual = sha256_of(target)
    if actual != source.sha256:
        target.unlink()
        raise CorpusError(
            f"{source.filename}: sha256 {actual} does not match the pinned {source.sha256}"
        )
    return target


def _ar_member(stream: IO[bytes], wanted_prefix: str) -> int:
    """Advance an ``ar`` archive (a .deb) to the member whose name starts with a prefix.

    Returns the member's size; the stream is left at its first byte.
    """
    if stream.read(8) != b"!<arch>\n":
        raise CorpusError("not an ar archive")
    while header := stream.read(60):
        if len(header) < 60:
            break
        name = header[:16].decode("ascii").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        if name.startswith(wanted_prefix):
            return size
        stream.seek(size + (size % 2), os.SEEK_CUR)
    raise CorpusError(f"no ar member named {wanted_prefix}*")


@contextmanager
def open_source_tarball(
    source: PypiSdist | DebianSource, archive: Path
) -> Iterator[tarfile.TarFile]:
    """Open the source tree's tarball as a stream: the sdist, or the one inside the .deb."""
    with archive.open("rb") as raw:
        if isinstance(source, PypiSdist):
            with tarfile.open(fileobj=raw, mode="r|*") as tree:
                yield tree
            return
        _ar_member(raw, "data.tar")
        with tarfile.open(fileobj=raw, mode="r|*") as data:
            for member in data:
                if member.name.removeprefix("./") == source.tarball:
                    inner = data.extractfile(member)
                    if inner is None:
                        break
                    with tarfile.open(fileobj=inner, mode="r|*") as tree:
                        yield tree
                    return
        raise CorpusError(f"{archive.name} holds no {source.tarball}")
