"""Which registered repository a caller's reference names, decided from the config alone.

Rules (seed 002 is the strictest, so it wins): a repository not registered in
`repo-reader.toml`, or denied by the server's policy, is `ACCESS_DENIED`; a bare name
matching several registered repositories is `AMBIGUOUS_REPOSITORY`. Whether a registered
repository is mirrored, and which commit a revision names, is the catalog's to say
(`worker.repos.catalog`), with the refusals below. No I/O here: the mock Repo Reader
(`worker.testing`) decides the same way.
"""

from __future__ import annotations

from worker.config import Config, RepoEntry
from worker.errors import AccessDenied, AmbiguousRepository, RepoNotFound, RevisionNotFound


def lookup_repo(config: Config, ref: str, *, field: str = "repo") -> RepoEntry:
    """The registered repository `ref` (``owner/name`` or a bare ``name``) names."""
    if "/" in ref:
        entry = config.repo(ref)
        candidates = [entry] if entry else []
    else:
        wanted = ref.lower()
        candidates = [r for r in config.repos if r.name.split("/", 1)[1].lower() == wanted]
    if not candidates:
        raise AccessDenied(
            f"{ref!r} is not a registered repository",
            repo=ref,
            field=field,
            reason="not-registered",
        )
    if len(candidates) > 1:
        names = sorted(c.name for c in candidates)
        raise AmbiguousRepository(
            f"{ref!r} matches {len(names)} repositories: {', '.join(names)}",
            repo=ref,
            field=field,
            candidates=names,
        )
    entry = candidates[0]
    if config.denied(entry.name):
        raise AccessDenied(
            f"{entry.name} is denied by the server's policy",
            repo=entry.name,
            field=field,
            reason="policy",
        )
    return entry


def not_mirrored(name: str) -> RepoNotFound:
    """The refusal for a registered repository with no published mirror."""
    return RepoNotFound(f"{name} is registered but not mirrored yet", repo=name)


def unknown_revision(name: str, revision: str) -> RevisionNotFound:
    """The refusal for a revision that names no commit of `name`."""
    return RevisionNotFound(
        f"{revision!r} is not a commit, tag or branch of {name}",
        repo=name,
        revision=revision,
    )
