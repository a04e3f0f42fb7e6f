"""What a research request decides before any repository content is read.

Its limits (its own, under the server's ceilings), its license policy, its query's terms,
the repositories in its scope, and which sources may be excerpted. The worker
(`research`) and the mock Repo Reader (`worker.testing`) decide them with this same code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from contracts.errors import ErrorCode
from contracts.research import MAX_OMITTED_REPOS, OmittedRepo, RepoReaderRequest
from contracts.types import NO_LICENSE
from worker.capabilities.tooling import check_query_length, within_ceiling
from worker.config import Config, RepoEntry
from worker.errors import (
    AccessDenied,
    InvalidRequest,
    LicenseNotAllowed,
    LicenseUnavailable,
    RepoNotFound,
    RequestTooBroad,
)
from worker.index.views.ranking import AnalysedQuery, analyse_query
from worker.licenses import LicensePolicy


@dataclass(frozen=True, slots=True)
class ResearchLimits:
    """The limits in force for one request: its own, or the server's defaults."""

    max_repos: int
    max_excerpt_chars: int
    max_excerpts_per_repo: int
    max_total_excerpts: int


@dataclass(frozen=True, slots=True)
class ResearchChecks:
    """What a request alone decides: its limits, its license policy and its query's terms."""

    limits: ResearchLimits
    policy: LicensePolicy
    query: AnalysedQuery
    """The query's informative terms (in order of first appearance) with their weights, and
    the code it mentions."""

    @property
    def weights(self) -> dict[str, float]:
        """The query's informative terms with their weights."""
        return self.query.weights


StateT = TypeVar("StateT")
StateT_co = TypeVar("StateT_co", covariant=True)


class RepoRegistry(Protocol[StateT_co]):
    """What the scope of a request is decided against: the catalog, or the mock's registry."""

    def lookup(self, ref: str, *, field: str = "repo") -> RepoEntry: ...

    def servable(self) -> list[str]: ...

    def state(self, name: str) -> StateT_co:
        """The repository's mirror state; REPO_NOT_FOUND when it is not mirrored."""
        ...


@dataclass(frozen=True, slots=True)
class InScope(Generic[StateT]):
    """A repository in a request's scope, each fact about it looked up once."""

    name: str
    revision: str | None
    """What the request pins it to (None: the mirrored head)."""
    state: StateT
    """Its mirror state, as the scope was decided against it."""


def check_research(request: RepoReaderRequest, config: Config) -> ResearchChecks:
    """What the request alone decides, or the failure it is refused with: a limit above its
    ceiling (LIMIT_EXCEEDED), a license id that is none (INVALID_REQUEST), a query with no
    informative term (REQUEST_TOO_BROAD)."""
    limits = research_limits(request, config)
    policy = LicensePolicy.from_constraints(
        request.license_constraints.allowed_licenses,
        request.license_constraints.compatible_with,
    )
    query = analyse_query(request.query)
    if not query.weights:
        if any(char.isalnum() and not char.isascii() for char in request.query):
            raise RequestTooBroad(
                "the query has no informative term: research ranks by words of ASCII letters, "
                "digits and underscores, and this query's words are in another script "
                "(code.search finds any text)",
                field="query",
                reason="no ascii words",
            )
        raise RequestTooBroad(
            "the query has no informative term (only stop words, single characters or symbols)",
            field="query",
        )
    return ResearchChecks(limits=limits, policy=policy, query=query)


def research_limits(request: RepoReaderRequest, config: Config) -> ResearchLimits:
    """The limits in force, or LimitExceeded naming the first one above its ceiling."""
    ceilings, defaults = config.limits, config.defaults
    check_query_length(request.query, ceilings.max_query_chars)
    repo_c, file_c = request.repo_constraints, request.file_constraints
    asked = {
        "repo_constraints.max_repos": repo_c.max_repos,
        "file_constraints.max_excerpt_chars": file_c.max_excerpt_chars,
        "file_constraints.max_excerpts_per_repo": file_c.max_excerpts_per_repo,
        "result_limits.max_total_excerpts": request.result_limits.max_total_excerpts,
    }
    values: dict[str, int] = {}
    for field, value in asked.items():
        name = field.rsplit(".", 1)[1]
        values[name] = within_ceiling(
            field, value, default=getattr(defaults, name), ceiling=getattr(ceilings, name)
        )
    return ResearchLimits(**values)


def research_scope(
    registry: RepoRegistry[StateT], request: RepoReaderRequest, limits: ResearchLimits
) -> list[InScope[StateT]]:
    """The repositories in scope, by name: allowlist (or everything mirrored) minus denylist,
    each with the revision the request pins it to and its mirror state.

    Where two of `repo_constraints.revisions` name one repository, the first one counts.
    """
    constraints = request.repo_constraints
    if constraints.allowlist is not None:
        names = []
        for i, ref in enumerate(constraints.allowlist):
            names.append(registry.lookup(ref, field=f"repo_constraints.allowlist[{i}]").name)
    else:
        names = registry.servable()
        if not names:
            raise RepoNotFound("no repository is mirrored yet")
    denied = set()
    for i, ref in enumerate(constraints.denylist):
        try:
            denied.add(registry.lookup(ref, field=f"repo_constraints.denylist[{i}]").name)
        except AccessDenied:
            continue  # denying what is not served anyway changes nothing
    scope = sorted(set(names) - denied)
    if not scope:
        raise InvalidRequest(
            "the denylist removes every repository in scope", field="repo_constraints.denylist"
        )
    if len(scope) > limits.max_repos:
        raise RequestTooBroad(
            f"{len(scope)} repositories in scope, more than max_repos = {limits.max_repos}; "
            "narrow it with repo_constraints.allowlist",
            field="repo_constraints.max_repos",
            repos_in_scope=len(scope),
            max_repos=limits.max_repos,
        )
    states = {name: registry.state(name) for name in scope}  # each must be mirrored
    pinned: dict[str, str] = {}
    for ref, revision in constraints.revisions.items():
        name = registry.lookup(ref, field=f"repo_constraints.revisions.{ref}").name
        if name not in states:
            raise InvalidRequest(
                f"repo_constraints.revisions names {ref!r}, which is not in scope",
                field=f"repo_constraints.revisions.{ref}",
            )
        pinned.setdefault(name, revision)
    return [InScope(name, pinned.get(name), states[name]) for name in scope]


def omit_unlicensed(
    roots: Mapping[str, object | None], *, required: bool
) -> tuple[OmittedRepo, ...]:
    """The repositories in scope to leave out because a license is required and none was
    detected for them (`roots`: each one's root license, None when none was); when that is
    every one of them, LicenseUnavailable instead.

    One unlicensed repository among those registered must not fail every request that does
    not name its repositories; the answer says which were left out.
    """
    if not required:
        return ()
    missing = sorted(name for name, info in roots.items() if info is None)
    if missing and len(missing) == len(roots):
        raise LicenseUnavailable(
            f"no license could be detected for {', '.join(missing)}, and one is required "
            "(license_constraints.require_license = false accepts unlicensed sources)",
            repos=missing,
            lifted_by="license_constraints.require_license",
        )
    code = str(ErrorCode.LICENSE_UNAVAILABLE)
    return tuple(OmittedRepo(repo=name, code=code) for name in missing[:MAX_OMITTED_REPOS])


def license_admits(
    spdx: str | None, policy: LicensePolicy, *, require_license: bool, refused: set[str]
) -> bool:
    """Whether a source under `spdx` (None: no license found) may be excerpted; a license the
    policy refuses is added to `refused`, for `licenses_not_allowed`."""
    if spdx is None:
        if require_license:
            return False
        spdx = NO_LICENSE
    if not policy.admits(spdx):
        refused.add(spdx)
        return False
    return True


def licenses_not_allowed(refused: Iterable[str]) -> LicenseNotAllowed:
    """The refusal when every matching source carries a license the request does not allow."""
    return LicenseNotAllowed(
        "every matching source carries a license the request does not allow",
        licenses=sorted(refused),
    )
