"""Tests of research semantics against real mirrored repositories and their real indexes."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import msgspec
import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contracts import OmittedRepo, RepoReaderRequest, ResearchArtifact
from tests.support.cache import SAMPLE_FILES, MirroredCache, SourceFactory
from tests.support.gitrepos import BSD_3_CLAUSE, MIT_LICENSE, Content, commit, init_repo
from worker.capabilities.research import ResearchAnswer, ResearchService
from worker.capabilities.table import Worker
from worker.errors import (
    AccessDenied,
    AmbiguousRepository,
    InvalidRequest,
    LicenseNotAllowed,
    LicenseUnavailable,
    LimitExceeded,
    RepoNotFound,
    RequestTooBroad,
    RevisionNotFound,
    Timeout,
)
from worker.licenses.identify import TextLicense
from worker.repos.layout import IdentifiedLicenses


def research(cache: MirroredCache) -> ResearchService:
    return Worker(cache.config, cache.root).research


def ask(service: ResearchService, query: str, **constraints: object) -> ResearchAnswer:
    request = msgspec.convert({"query": query, **constraints}, RepoReaderRequest)
    return service.answer(request, deadline=time.monotonic() + 30)


def blob_text_at(cache: MirroredCache, artifact: ResearchArtifact) -> str:
    """The text at the artifact's span of its path at its commit, read straight from git."""
    repo = pygit2.Repository(str(cache.root / "repos" / f"{artifact.repo}.git"))
    blob = repo[artifact.commit].peel(pygit2.Commit).tree[artifact.path]
    data = repo[blob.id].data
    assert str(blob.id) == artifact.blob
    start, end = (int(x) for x in artifact.excerpt_span.replace("L", "").split("-"))
    return "\n".join(data.decode(artifact.encoding).split("\n")[start - 1 : end])


@pytest.fixture
def sample(cache: MirroredCache, make_source: SourceFactory) -> MirroredCache:
    source, _ = make_source("sample")
    cache.add("acme/sample", source)
    return cache


def test_answer_points_at_the_defining_file(sample: MirroredCache) -> None:
    """A question about routing gets the router's code, attributed and pinned."""
    answer = ask(research(sample), "how are URL paths mapped to handler functions when routing")
    assert answer.artifacts
    top = answer.artifacts[0]
    assert top.path == "sample/routing.py"
    assert (top.repo, top.license, top.license_source) == ("acme/sample", "MIT", "LICENSE")
    assert top.commit == answer.resolved[0].commit
    assert answer.resolved[0].ref == "refs/heads/main"
    assert answer.resolved[0].license == "MIT"
    assert top.swhid.startswith(f"swh:1:cnt:{top.blob};origin=file://")
    assert f"anchor=swh:1:rev:{top.commit}" in top.swhid
    for artifact in answer.artifacts:
        assert artifact.excerpt == blob_text_at(sample, artifact)


def test_same_request_same_bytes(sample: MirroredCache) -> None:
    """Asking twice against the same commits gives byte-identical answers."""
    service = research(sample)
    first = msgspec.msgpack.encode(ask(service, "load the configuration file").artifacts)
    again = msgspec.msgpack.encode(
        research(sample)
        .answer(
            RepoReaderRequest(query="load the configuration file"), deadline=time.monotonic() + 30
        )
        .artifacts
    )
    assert first == again


WORDS = [
    "router",
    "dispatch",
    "config",
    "load",
    "handler",
    "path",
    "toml",
    "error",
    "routes",
    "request",
]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),
    max_chars=st.integers(20, 400),
    per_repo=st.integers(1, 6),
)
def test_artifacts_are_bounded_verifiable_and_licensed(
    sample: MirroredCache, words: list[str], max_chars: int, per_repo: int
) -> None:
    """Every excerpt fits its limit, equals the text at its span, and carries a license."""
    answer = ask(
        research(sample),
        " ".join(words),
        file_constraints={"max_excerpt_chars": max_chars, "max_excerpts_per_repo": per_repo},
    )
    assert len(answer.artifacts) <= per_repo
    for artifact in answer.artifacts:
        assert len(artifact.excerpt) <= max_chars
        assert artifact.excerpt == blob_text_at(sample, artifact)
        assert artifact.license == "MIT"
    spans_by_file: dict[str, list[tuple[int, int]]] = {}
    for artifact in answer.artifacts:
        start, end = (int(x) for x in artifact.excerpt_span.replace("L", "").split("-"))
        spans_by_file.setdefault(artifact.path, []).append((start, end))
    for spans in spans_by_file.values():
        spans.sort()
        assert all(a[1] < b[0] for a, b in itertools.pairwise(spans)), "overlapping spans"


def test_spdx_header_wins_and_nested_license_applies(
    cache: MirroredCache, make_source: SourceFactory
) -> None:
    """A file's SPDX header beats the root LICENSE; a nested LICENSE governs its subtree."""
    files: dict[str, Content] = {
        "LICENSE": MIT_LICENSE,
        "core/engine.py": (
            "# SPDX-License-Identifier: Apache-2.0 OR MIT\n"
            "def start_engine():\n    return 'turbine'\n"
        ),
        "vendor/lib/LICENSE": BSD_3_CLAUSE,
        "vendor/lib/turbine.py": "def spin_turbine():\n    return 'turbine spinning'\n",
    }
    source, _ = make_source("mixed", files)
    cache.add("acme/mixed", source)
    answer = ask(research(cache), "turbine")
    by_path = {a.path: a for a in answer.artifacts}
    assert by_path["core/engine.py"].license == "Apache-2.0 OR MIT"
    assert by_path["core/engine.py"].license_source == "spdx-header"
    assert by_path["vendor/lib/turbine.py"].license_source == "vendor/lib/LICENSE"
    assert by_path["vendor/lib/turbine.py"].license == "BSD-3-Clause"


def test_licenses_come_from_the_mirrors_identifications(sample: MirroredCache) -> None:
    """A worker takes the mirror's answer for a license text; with none readable, finds its own."""
    layout = sample.mirror.layout
    published = layout.read_licenses("acme/sample")
    assert published is not None
    (license_id,) = published.texts
    # An answer no identification of the MIT text gives: only the mirror's table says it.
    mirrored = {license_id: TextLicense(spdx="0BSD", confidence=0.9)}
    layout.write_licenses(
        "acme/sample", IdentifiedLicenses(commit=published.commit, texts=mirrored)
    )
    answer = ask(research(sample), "how are URL paths mapped to handler functions")
    assert answer.resolved[0].license == "0BSD"
    assert {a.license for a in answer.artifacts} == {"0BSD"}
    assert {a.license_confidence for a in answer.artifacts} == {0.9}
    layout.licenses_file("acme/sample").write_bytes(b"not json")
    answer = ask(research(sample), "how are URL paths mapped to handler functions")
    assert answer.resolved[0].license == "MIT"


def test_unlicensed_repositories_are_left_out_and_named(
    cache: MirroredCache, make_source: SourceFactory
) -> None:
    """A repository without a license is left out of a request that requires one, and named
    in `omitted`; with nothing licensed left in scope, the request is LICENSE_UNAVAILABLE
    (the field that lifts it named); accepting unlicensed sources takes it in."""
    licensed, _ = make_source("licensed")
    bare, _ = make_source("bare", {"tool.py": "def router():\n    return 'routing'\n"})
    cache.add("acme/licensed", licensed)
    cache.add("acme/bare", bare)
    answer = ask(research(cache), "router routing")
    assert [r.repo for r in answer.resolved] == ["acme/licensed"]
    assert {a.repo for a in answer.artifacts} == {"acme/licensed"}
    assert answer.omitted == (OmittedRepo(repo="acme/bare", code="LICENSE_UNAVAILABLE"),)
    with pytest.raises(LicenseUnavailable) as info:
        ask(research(cache), "router routing", repo_constraints={"allowlist": ["acme/bare"]})
    assert info.value.details == {
        "repos": ["acme/bare"],
        "lifted_by": "license_constraints.require_license",
    }
    answer = ask(research(cache), "router routing", license_constraints={"require_license": False})
    assert {a.license for a in answer.artifacts if a.repo == "acme/bare"} == {"NOASSERTION"}
    assert answer.omitted == ()


def test_garbage_license_text_is_no_license(
    cache: MirroredCache, make_source: SourceFactory
) -> None:
    """A LICENSE file that is not a license text does not count as a license."""
    source, _ = make_source("junk", {"LICENSE": "ask me\n", "a.py": "def router():\n    pass\n"})
    cache.add("acme/junk", source)
    with pytest.raises(LicenseUnavailable):
        ask(research(cache), "router")


def test_allowed_licenses_filter_sources(sample: MirroredCache) -> None:
    """allowed_licenses admits matching sources and refuses the rest with LICENSE_NOT_ALLOWED."""
    assert ask(
        research(sample),
        "router",
        license_constraints={"allowed_licenses": ["MIT", "BSD-3-Clause"]},
    ).artifacts
    with pytest.raises(LicenseNotAllowed):
        ask(research(sample), "router", license_constraints={"allowed_licenses": ["GPL-3.0-only"]})
    assert ask(
        research(sample), "router", license_constraints={"compatible_with": "GPL-3.0-only"}
    ).artifacts
    with pytest.raises(InvalidRequest) as info:
        ask(research(sample), "router", license_constraints={"allowed_licenses": ["NOT-A-LICENSE"]})
    assert "allowed_licenses" in info.value.details["field"]


def test_binary_huge_and_non_utf8_blobs(cache: MirroredCache, make_source: SourceFactory) -> None:
    """Binary and oversized blobs are never excerpted; latin-1 text is, verifiably."""
    files: dict[str, Content] = {
        "LICENSE": MIT_LICENSE,
        "logo.png": b"\x89PNG\r\n\x1a\n\0\0\0 zebra zebra zebra",
        "big.txt": "zebra stripes\n" * 200_000,
        "notes.txt": "caf\xe9 zebra crossing\n".encode("latin-1"),
    }
    source, _ = make_source("blobs", files)
    cache.add("acme/blobs", source)
    answer = ask(research(cache), "zebra")
    assert [a.path for a in answer.artifacts] == ["notes.txt"]
    assert answer.artifacts[0].encoding == "latin-1"
    assert answer.artifacts[0].excerpt == blob_text_at(cache, answer.artifacts[0])


def test_allowed_extensions(sample: MirroredCache) -> None:
    """Only files with an allowed extension are excerpted."""
    answer = ask(
        research(sample),
        "configuration files routes",
        file_constraints={"allowed_extensions": [".md"]},
    )
    assert {a.path for a in answer.artifacts} == {"README.md"}


def test_limits_above_ceilings_are_refused(sample: MirroredCache) -> None:
    """Each limit above its ceiling is LIMIT_EXCEEDED naming the field, never clamped."""
    service = research(sample)
    cases = {
        "repo_constraints.max_repos": {"repo_constraints": {"max_repos": 10_000}},
        "file_constraints.max_excerpt_chars": {"file_constraints": {"max_excerpt_chars": 10**6}},
        "file_constraints.max_excerpts_per_repo": {
            "file_constraints": {"max_excerpts_per_repo": 10**6}
        },
        "result_limits.max_total_excerpts": {"result_limits": {"max_total_excerpts": 10**6}},
    }
    for field, constraints in cases.items():
        with pytest.raises(LimitExceeded) as info:
            ask(service, "router", **constraints)
        assert info.value.details["field"] == field
    with pytest.raises(LimitExceeded):
        ask(service, "router " * 2000)


def test_long_bug_report_queries_are_accepted(sample: MirroredCache) -> None:
    """A whole bug report up to the default 8,000 characters is a valid query."""
    report = ("When I register a route and dispatch a request the handler is not called. " * 120)[
        :8000
    ]
    assert ask(research(sample), report).artifacts


@pytest.mark.parametrize("query", ["the of and", "*", "x", "?!", "a an the * x"])
def test_uninformative_queries_are_too_broad(sample: MirroredCache, query: str) -> None:
    """A query of only stop words, single characters or symbols is REQUEST_TOO_BROAD."""
    with pytest.raises(RequestTooBroad):
        ask(research(sample), query)


@pytest.mark.parametrize("query", ["漢字を返す関数", "функция возвращает", "日本 the"])
def test_a_query_in_another_script_is_told_where_to_search(
    sample: MirroredCache, query: str
) -> None:
    """Words outside ASCII are not research terms: the refusal says so and names code.search."""
    with pytest.raises(RequestTooBroad, match=r"code\.search") as refused:
        ask(research(sample), query)
    assert refused.value.details == {"field": "query", "reason": "no ascii words"}


def test_scope_errors(cache: MirroredCache, make_source: SourceFactory) -> None:
    """Unregistered, denied, ambiguous, unmirrored and too-many repositories fail explicitly."""
    source, _ = make_source("sample")
    cache.add("acme/sample", source)
    cache.add("other/sample", source)
    cache.mirror.add("acme/later", str(source))  # registered, never synced
    cache.set_config('[policy]\ndeny = ["other/*"]\n[defaults]\nmax_repos = 1\n')
    service = research(cache)
    with pytest.raises(AccessDenied, match="not a registered"):
        ask(service, "router", repo_constraints={"allowlist": ["nobody/nothing"]})
    with pytest.raises(AccessDenied, match="policy"):
        ask(service, "router", repo_constraints={"allowlist": ["other/sample"]})
    with pytest.raises(AmbiguousRepository) as ambiguous:
        ask(service, "router", repo_constraints={"allowlist": ["sample"]})
    assert ambiguous.value.details["candidates"] == ["acme/sample", "other/sample"]
    with pytest.raises(RepoNotFound):
        ask(service, "router", repo_constraints={"allowlist": ["acme/later"]})
    with pytest.raises(RequestTooBroad):
        ask(service, "router", repo_constraints={"allowlist": ["acme/sample", "acme/later"]})
    with pytest.raises(InvalidRequest, match="removes every"):
        ask(
            service,
            "router",
            repo_constraints={"allowlist": ["acme/sample"], "denylist": ["acme/sample"]},
        )
    with pytest.raises(InvalidRequest, match="not in scope"):
        ask(
            service,
            "router",
            repo_constraints={"allowlist": ["acme/sample"], "revisions": {"acme/later": "main"}},
        )
    answer = ask(service, "router")  # no allowlist: mirrored, not denied
    assert [r.repo for r in answer.resolved] == ["acme/sample"]


def test_revisions_pin_commits(cache: MirroredCache, tmp_path: Path) -> None:
    """A sha, tag or branch pins the repository; an unknown one is REVISION_NOT_FOUND."""
    repo = init_repo(tmp_path / "src")
    old = commit(
        repo,
        {**SAMPLE_FILES, "sample/legacy.py": "def legacy_router():\n    return 'old router'\n"},
    )
    repo.create_tag(
        "v1", pygit2.Oid(hex=old), pygit2.enums.ObjectType.COMMIT, repo.default_signature, "v1"
    )
    new = commit(repo, {"sample/legacy.py": None})
    cache.add("acme/pinned", tmp_path / "src")
    service = research(cache)
    assert "sample/legacy.py" not in {a.path for a in ask(service, "legacy router").artifacts}
    for revision in ("v1", old, old[:10]):
        answer = ask(
            service, "legacy router", repo_constraints={"revisions": {"acme/pinned": revision}}
        )
        assert answer.resolved[0].commit == old
        assert answer.resolved[0].ref == revision
        assert "sample/legacy.py" in {a.path for a in answer.artifacts}
    assert (
        ask(service, "router", repo_constraints={"revisions": {"pinned": "main"}})
        .resolved[0]
        .commit
        == new
    )
    two = {"acme/pinned": "v1", "pinned": "main"}  # two names of one repository
    assert ask(service, "router", repo_constraints={"revisions": two}).resolved[0].commit == old
    with pytest.raises(RevisionNotFound):
        ask(service, "router", repo_constraints={"revisions": {"acme/pinned": "no-such-branch"}})


def test_spent_deadline_is_timeout(sample: MirroredCache) -> None:
    """A request whose time budget is already spent fails with TIMEOUT."""
    with pytest.raises(Timeout):
        research(sample).answer(RepoReaderRequest(query="router"), deadline=time.monotonic() - 1)


def test_result_limits(sample: MirroredCache) -> None:
    """max_total_excerpts bounds the whole answer."""
    answer = ask(
        research(sample),
        "router config handler path request",
        result_limits={"max_total_excerpts": 1},
    )
    assert len(answer.artifacts) == 1


def test_artifacts_say_why_they_were_chosen(cache: MirroredCache, tmp_path: Path) -> None:
    """Each artifact names the signals that chose it: terms, a linked definition, history."""
    repo = init_repo(tmp_path / "src")
    files: dict[str, Content | None] = {
        **SAMPLE_FILES,
        "sample/frames.py": "def convert_frame(value):\n    return value * 2\n",
        "sample/other.py": "def unrelated():\n    return 'frame conversion notes'\n",
    }
    commit(repo, files, message="initial import")
    pinned = commit(
        repo,
        {"sample/frames.py": "def convert_frame(value):\n    return value * 3\n"},
        message="Fix sidereal drift when converting frames",
    )
    commit(
        repo,
        {"sample/other.py": "def unrelated():\n    return 'frame'\n"},
        message="Fix leap second handling in frame conversion",
    )
    cache.add("acme/frames", tmp_path / "src")
    service = research(cache)
    report = "Frame conversion drifts: `convert_frame` gives sidereal drift"
    answer = ask(service, report, repo_constraints={"revisions": {"acme/frames": pinned}})
    top = answer.artifacts[0]
    assert top.path == "sample/frames.py"
    assert top.signals == ("terms", "entity", "history")
    # The later commit is not in the pinned commit's past; at the head it is.
    leap = "leap second handling in unrelated"
    pinned_answer = ask(service, leap, repo_constraints={"revisions": {"acme/frames": pinned}})
    assert all("history" not in a.signals for a in pinned_answer.artifacts)
    head_answer = ask(service, leap)
    assert "history" in head_answer.artifacts[0].signals


def test_repositories_rank_together_by_how_much_of_the_query_they_hold(
    cache: MirroredCache, tmp_path: Path
) -> None:
    """A repository holding only the query's common words does not outrank the one that holds
    all of it because those words are rare in it."""
    web = init_repo(tmp_path / "web")
    web_files: dict[str, Content | None] = {
        "LICENSE": MIT_LICENSE,
        "web/app.py": (
            "def teardown_request(handler):\n"
            '    """Register callbacks run after each request, as teardown."""\n'
            "    return handler\n"
        ),
    }
    web_files |= {
        f"web/view{n}.py": f"def view{n}(request):\n    return request.args[{n}]\n"
        for n in range(8)
    }
    commit(web, web_files)
    algebra = init_repo(tmp_path / "algebra")
    algebra_files: dict[str, Content | None] = {
        "LICENSE": MIT_LICENSE,
        "algebra/hooks.py": (
            "def on_request(callbacks):\n"
            '    """Run callbacks when a request for simplification comes."""\n'
            "    return [c() for c in callbacks]\n"
        ),
    }
    algebra_files |= {
        f"algebra/poly{n}.py": f"def poly{n}(x):\n    return x ** {n} + {n}\n" for n in range(60)
    }
    commit(algebra, algebra_files)
    cache.add("acme/web", tmp_path / "web")
    cache.add("acme/algebra", tmp_path / "algebra")
    answer = ask(research(cache), "request teardown callbacks")
    assert (answer.artifacts[0].repo, answer.artifacts[0].path) == ("acme/web", "web/app.py")
