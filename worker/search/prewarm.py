"""Imported by the fork server the build's workers come from: does there, once, what each
worker would do on its first blobs (and in the process that starts them, which works out
the commit's path index while they analyse).

That is loading every parsed language's grammar and compiling its definition query (20 ms
for C++ alone), making a parser for each, and a first analysis through terms and postings
(Arrow's kernels, the stemmer). Each worker forked from the server then starts with them:
before, a worker of a two-worker Django build spent about 35 ms of its second on them.
Importing this module anywhere else only costs that time once.
"""

from __future__ import annotations

from typing import Final

from worker.search.analysis import BlobSource, SegmentBuilder
from worker.search.languages import PARSED_LANGUAGES

_SAMPLE: Final = b"def handleRequest(self, request_id):\n    return parse_url(self.base_url)\n"
_PATHS: Final[dict[str, str]] = {
    "python": "sample.py",
    "javascript": "sample.js",
    "typescript": "sample.ts",
    "tsx": "sample.tsx",
    "go": "sample.go",
    "java": "Sample.java",
    "rust": "sample.rs",
    "c": "sample.c",
    "cpp": "sample.cpp",
}


def warm_up() -> None:
    """Analyse one small blob under each parsed language (results are thrown away)."""
    builder = SegmentBuilder(1 << 20)
    builder.add(
        BlobSource(bytes([i]) * 20, _PATHS[language], _SAMPLE)
        for i, language in enumerate(sorted(PARSED_LANGUAGES))
    )
    builder.tables()


warm_up()
