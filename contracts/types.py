"""Constrained scalar types shared by the message families."""

from __future__ import annotations

from typing import Annotated, Final

from msgspec import Meta

RepoId = Annotated[
    str,
    Meta(
        pattern=r"^[A-Za-z0-9_-][A-Za-z0-9_.-]*/(?!\.\.?$)[A-Za-z0-9_.-]+$",
        max_length=200,
        description="A repository as owner/name.",
        examples=["pallets/flask"],
    ),
]
RepoRef = Annotated[
    str,
    Meta(
        pattern=r"^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*/)?(?!\.\.?$)[A-Za-z0-9_.-]+$",
        max_length=200,
        description="A repository as owner/name, or a bare name when that is unambiguous.",
        examples=["pallets/flask", "flask"],
    ),
]
Revision = Annotated[
    str,
    Meta(
        pattern=r"^(?![-/])(?!.*\.\.)(?!.*//)[A-Za-z0-9_./+-]+$",
        min_length=1,
        max_length=250,
        description=(
            "A commit sha (full or abbreviated), tag or branch name; HEAD is the mirrored "
            "default branch head, as no revision is."
        ),
    ),
]
Sha = Annotated[str, Meta(pattern=r"^[0-9a-f]{40}$", description="A full git object id.")]
SpdxId = Annotated[
    str,
    Meta(
        pattern=r"^[A-Za-z0-9.+-]+$",
        max_length=100,
        description="An SPDX license identifier.",
        examples=["MIT", "Apache-2.0"],
    ),
]
Extension = Annotated[
    str,
    Meta(
        pattern=r"^\.[A-Za-z0-9_+-]{1,20}$",
        description="A file extension with its leading dot.",
        examples=[".py", ".md"],
    ),
]
PositiveInt = Annotated[int, Meta(ge=1)]
RepoPath = Annotated[
    str,
    Meta(
        max_length=4096,
        description="A path inside a repository's tree, '/'-separated, relative to its root.",
    ),
]


NO_LICENSE: Final = "NOASSERTION"
"""The SPDX word an answer's `license` carries when no license could be determined (only
when the request did not require one)."""
