"""A mock Repo Reader (seed 000, "Mocking and Testing"): the service in process, for an
orchestrator's own tests, with no NATS server and no git repository.

    reader = MockRepoReader(repos=["pallets/flask"])
    reader.add_excerpt("pallets/flask", "src/flask/sessions.py", "def sign(value): ...")
    async with reader.client() as client:       # what RepoReaderClient.connect(...) gives
        result = await client.research(RepoReaderRequest(query="session signing"))

What is real: the request is encoded as the real client encodes it and decoded with the
server's codec (strict: unknown fields and wrong types are INVALID_REQUEST naming the
field); the request id, a disabled capability, the limits and ceilings of the config
(`worker.config.Config`, the server's defaults unless given), the query, path, pattern,
language and license checks, and the repository rules (not registered or denied:
ACCESS_DENIED, ambiguous bare name, not mirrored, unknown revision, no license) are decided
by the server's own functions, in the server's order. The answer is split into batches
under `max_payload` by the server's code and read back by the real client's, so a caller
sees the same types, batches, request id and resolved commits, and the same exception for
each refusal.

What is made up: the repositories (`MockRepo`: a head commit, refs, a root license) and the
answers, which the test configures: research artifacts (`add_excerpt`, `add_artifacts`, or
a function of the request), a response per tool subject (`on`), or an error with any code
(`fail`). Research artifacts are then chosen as the service chooses them: only repositories
in scope at their resolved commits, allowed extensions and licenses, at most the request's
excerpts per repository and in all, excerpts cut to `max_excerpt_chars`. Tool responses are
capped at the request's `max_results`, `limit`, `max_entries`, `max_nodes` or `max_changes`.

Imports only msgspec, `contracts` and light `worker` modules; the capability checks
(`worker.testing.checks`) are loaded at the first request.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Final, TypeVar, cast

import msgspec

from contracts.errors import ErrorCode, RepoReaderError
from contracts.registry import BATCHED, MESSAGES
from contracts.research import RepoReaderRequest, RepoReaderResponse, ResearchArtifact, ResolvedRepo
from contracts.subjects import HEADER_REQUEST_ID, WORKER_SUBJECTS, Subject
from contracts.types import NO_LICENSE
from worker.calls import AnswerReader, RepoReaderAPI, encode_request, request_headers
from worker.config import Config, RepoEntry
from worker.errors import NoAnswer, NoResponders
from worker.languages import language_of
from worker.repos.excerpts import cut_excerpt
from worker.repos.registry import lookup_repo, not_mirrored, unknown_revision
from worker.repos.swhid import content_swhid, origin_url
from worker.service import exchange
from worker.service.codec import Codec, Codecs, error_from_exception
from worker.service.replies import body_budget, reply_messages

ResponseT = TypeVar("ResponseT", bound=msgspec.Struct)

DEFAULT_MAX_PAYLOAD: Final = 1 << 20
"""nats-server's default max payload: answers are split into batches under it."""
_CAPPED: Final[Mapping[Subject, tuple[str, ...]]] = {
    **{subject: (name,) for subject, name in BATCHED.items() if name is not None},
    Subject.GRAPH_DIFF: ("entities", "edges"),
}
"""The lists a request's cap bounds, per subject."""
_CUT_MEANS_TRUNCATED: Final = frozenset(
    {Subject.CODE_SEARCH, Subject.CODE_LIST, Subject.GIT_HISTORY, Subject.GRAPH_SEARCH,
     Subject.GRAPH_TRAVERSE, Subject.GRAPH_DIFF}
)  # fmt: skip
"""Subjects whose `truncated` says the capped list had more (git.churn's is about commits)."""
_HEX: Final = re.compile(r"^[0-9a-f]{4,40}$")
_LINES: Final = re.compile(r";lines=[0-9-]+$")

ToolAnswer = msgspec.Struct | Callable[[Any], msgspec.Struct]
"""A tool subject's answer: a response of its type, or a function of the request giving one."""
ResearchSource = Callable[[RepoReaderRequest], Iterable[ResearchArtifact]]
"""Research candidates as a function of the request; the mock then chooses among them."""


def fake_sha(*parts: str) -> str:
    """A well-formed, made-up git object id, the same for the same parts."""
    return hashlib.sha1("\0".join(("repo-reader-mock", *parts)).encode()).hexdigest()


def blob_id(text: str) -> str:
    """The git blob id of `text` (UTF-8), as `git hash-object` computes it."""
    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True, slots=True)
class MockRepo:
    """A registered repository as the mock serves it."""

    name: str
    """`owner/name`."""
    head: str | None = None
    """The default branch's commit; None: a made-up one (`fake_sha(name)`)."""
    default_ref: str = "refs/heads/main"
    refs: Mapping[str, str] = field(default_factory=dict)
    """Branch and tag names a request may pin, each to its commit."""
    commits: tuple[str, ...] = ()
    """More commits a request may pin by sha (or an unambiguous prefix of one)."""
    license: str | None = "MIT"
    """The root license's SPDX expression; None when none was detected."""
    license_source: str = "LICENSE"
    mirrored: bool = True
    """False: registered but not mirrored yet (REPO_NOT_FOUND)."""
    url: str | None = None
    """The upstream URL (SWHID origins); None: `https://example.invalid/<name>`."""

    @property
    def head_commit(self) -> str:
        """The head, made up when none was given."""
        return self.head or fake_sha(self.name)

    @property
    def origin(self) -> str:
        """The origin its SWHIDs name."""
        return origin_url(self.url or f"https://example.invalid/{self.name}")


@dataclass(frozen=True, slots=True)
class Pinned:
    """A repository resolved to a commit."""

    repo: MockRepo
    commit: str
    ref: str


@dataclass(slots=True)
class MockCall:
    """One request the mock received, and how it went."""

    subject: Subject
    request_id: str
    request: Any = None
    """The decoded request; None when it could not be decoded."""
    error: RepoReaderError | None = None
    """The error it was answered with, if any."""
    exception: BaseException | None = None
    """The exception behind `error` (a responder's own bug shows here as well)."""


@dataclass(frozen=True, slots=True)
class WireReply:
    """What the mock sends back for one message: the headers and bodies of its messages."""

    headers: dict[str, str]
    messages: list[bytes]


class MockConfigurationError(TypeError):
    """The mock was given something the service could never answer with (a test's mistake)."""


class SimulatedError(Exception):
    """Raised inside the mock to answer with an error configured by `MockRepoReader.fail`."""

    def __init__(self, error: RepoReaderError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass(slots=True)
class _Failure:
    error: RepoReaderError
    times: int | None


class _Registry:
    """The repositories the mock serves: the catalog's rules over made-up mirrors."""

    def __init__(self, config: Config, repos: Mapping[str, MockRepo]) -> None:
        self.config = config
        self.repos = repos

    def lookup(self, ref: str, *, field: str = "repo") -> RepoEntry:
        return lookup_repo(self.config, ref, field=field)

    def servable(self) -> list[str]:
        return sorted(
            name
            for name, repo in self.repos.items()
            if repo.mirrored and not self.config.denied(name)
        )

    def state(self, name: str) -> MockRepo:
        repo = self.repos[name]
        if not repo.mirrored:
            raise not_mirrored(name)
        return repo

    def resolve(self, name: str, revision: str | None) -> Pinned:
        repo = self.state(name)
        if revision is None:
            return Pinned(repo=repo, commit=repo.head_commit, ref=repo.default_ref)
        branches = {repo.default_ref.removeprefix("refs/heads/"): repo.head_commit, **repo.refs}
        if revision in branches:
            return Pinned(repo=repo, commit=branches[revision], ref=revision)
        if _HEX.match(revision):
            known = {repo.head_commit, *repo.refs.values(), *repo.commits}
            found = [commit for commit in known if commit.startswith(revision)]
            if len(found) == 1:
                return Pinned(repo=repo, commit=found[0], ref=revision)
        raise unknown_revision(name, revision)

    def pin(self, ref: str, revision: str | None) -> Pinned:
        return self.resolve(self.lookup(ref, field="repo").name, revision)


class MockRepoReader:
    """The Repo Reader service in process: validates as the service does, answers as told.

    `config` gives the limits, ceilings, policy and enabled capabilities (default: the
    server's defaults) and registers its `[[repos]]`; `repos` registers more or describes
    them (`MockRepo`, or a name for a mirrored, MIT-licensed repository at a made-up commit).
    """

    def __init__(
        self,
        config: Config | None = None,
        *,
        repos: Iterable[MockRepo | str] = (),
        max_payload: int = DEFAULT_MAX_PAYLOAD,
    ) -> None:
        config = config or Config()
        described = {
            r.name: r for r in (MockRepo(name=r) if isinstance(r, str) else r for r in repos)
        }
        entries = {e.name: e for e in config.repos}
        for name, repo in described.items():
            entries.setdefault(name, RepoEntry(name=name, url=repo.url or f"mock://{name}"))
        self.config = msgspec.structs.replace(config, repos=tuple(entries.values()))
        self.max_payload = max_payload
        self._registry = _Registry(
            self.config,
            {name: described.get(name, MockRepo(name=name)) for name in entries},
        )
        self._codecs = Codecs({subject: types[0] for subject, types in MESSAGES.items()})
        self._answers: dict[Subject, ToolAnswer] = {}
        self._research: ResearchSource | None = None
        self._artifacts: list[ResearchArtifact] = []
        self._failures: dict[Subject, list[_Failure]] = {}
        self.calls: list[MockCall] = []
        """Every request received, in order."""

    # What the test configures.

    def repo(self, name: str) -> MockRepo:
        """The registered repository `name` (exactly as registered)."""
        try:
            return self._registry.repos[name]
        except KeyError:
            raise MockConfigurationError(f"{name} is not registered with the mock") from None

    def client(self, *, json: bool = False) -> MockRepoReaderClient:
        """A client with RepoReaderClient's API, calling this mock; `json` as the real one's."""
        return MockRepoReaderClient(self, json=json)

    def add_artifacts(self, *artifacts: ResearchArtifact) -> None:
        """Research artifacts the service holds: found when their repository is in scope at
        their commit and the request's constraints admit them."""
        for artifact in artifacts:
            self.repo(artifact.repo)
        self._artifacts.extend(artifacts)

    def add_excerpt(
        self,
        repo: str,
        path: str,
        excerpt: str,
        *,
        start_line: int = 1,
        score: float = 1.0,
        commit: str | None = None,
        license: str | None = None,
        license_source: str | None = None,
        symbol: str | None = None,
    ) -> ResearchArtifact:
        """Add (and return) an artifact with its attribution filled in: lines from
        `start_line` (a final line break is no line of an excerpt), the repository's head and
        root license unless given, the blob id of the text, a language from the path, a SWHID.
        """
        known = self.repo(repo)
        excerpt = excerpt.removesuffix("\n")
        commit = commit or known.head_commit
        spdx = license or known.license or NO_LICENSE
        end_line = start_line + excerpt.count("\n")
        blob = blob_id(excerpt)
        artifact = ResearchArtifact(
            excerpt=excerpt,
            repo=repo,
            commit=commit,
            path=path,
            license=spdx,
            license_source=license_source
            or ("none" if spdx == NO_LICENSE else known.license_source),
            excerpt_span=f"L{start_line}-L{end_line}",
            score=score,
            blob=blob,
            language=language_of(path),
            symbol=symbol,
            swhid=content_swhid(
                blob=blob,
                origin=known.origin,
                commit=commit,
                path=path,
                start_line=start_line,
                end_line=end_line,
            ),
        )
        self.add_artifacts(artifact)
        return artifact

    def on(self, subject: Subject, answer: ToolAnswer | ResearchSource) -> None:
        """Answer `subject` with `answer`: for a tool, a response of its type or a function of
        the request returning one (it may raise a RepoReaderFailure); for research, a
        function of the request returning candidate artifacts. The mock fills in the request
        id, the resolved repository and commit when left empty, and applies the request's caps.
        """
        if subject is Subject.RESEARCH:
            if not callable(answer):
                raise MockConfigurationError(
                    "research answers are artifacts: use add_artifacts(), or give a function"
                )
            self._research = cast(ResearchSource, answer)
            return
        if not callable(answer):
            self._check_response(subject, answer)
        self._answers[subject] = cast(ToolAnswer, answer)

    def fail(
        self,
        subject: Subject,
        code: ErrorCode | str,
        message: str | None = None,
        *,
        times: int | None = None,
        **details: Any,
    ) -> None:
        """Answer `subject` with an error of `code` (any ErrorCode, or an unknown one as a
        newer server might send) instead of its answer; the next `times` requests only, or
        every one. A request the service's checks refuse is still refused as the service
        refuses it: the simulated error answers only requests that pass them."""
        text = message or f"simulated {code} on {subject.capability}"
        self._failures.setdefault(subject, []).append(
            _Failure(
                error=RepoReaderError(code=str(code), message=text, details=details), times=times
            )
        )

    def clear(self, subject: Subject | None = None) -> None:
        """Forget the configured answers and errors (of `subject`, or of every subject)."""
        subjects = [subject] if subject is not None else list(Subject)
        for each in subjects:
            self._answers.pop(each, None)
            self._failures.pop(each, None)
            if each is Subject.RESEARCH:
                self._research = None
                self._artifacts.clear()

    # The service.

    def answer(
        self, subject: Subject, data: bytes, *, headers: Mapping[str, str] | None = None
    ) -> WireReply:
        """Answer one message as a worker would: its reply headers and message bodies.

        Raises NoResponders for a mirror subject no answer was configured for (no mirror
        service runs here), and MockConfigurationError for a configured answer of the wrong type.
        """
        if subject not in WORKER_SUBJECTS and subject not in self._answers:
            raise NoResponders(
                f"no mirror service (`repo-reader mirror serve`) serves {subject.value}",
                subject=subject.value,
                tries=1,
            )
        given = dict(headers or {})
        request_id, bad_id = exchange.request_id_of(given.get(HEADER_REQUEST_ID))
        codec = self._codecs.for_message(given, data)
        reply_headers = exchange.reply_headers(codec.content_type, request_id)
        call = MockCall(subject=subject, request_id=request_id)
        self.calls.append(call)
        try:
            if bad_id is not None:
                raise bad_id
            budget = body_budget(self.max_payload, reply_headers)
            messages = self._answer(subject, data, codec, call, budget)
        except MockConfigurationError:
            raise
        except Exception as exc:
            error = exc.error if isinstance(exc, SimulatedError) else error_from_exception(exc)
            call.error, call.exception = error, exc
            error_headers, body = exchange.error_reply_of(
                error,
                request_id=request_id,
                headers=reply_headers,
                max_payload=self.max_payload,
                encode=codec.encode,
            )
            return WireReply(headers=error_headers, messages=[body])
        return WireReply(headers=reply_headers, messages=messages)

    def _answer(
        self, subject: Subject, data: bytes, codec: Codec, call: MockCall, budget: int
    ) -> list[bytes]:
        if subject in WORKER_SUBJECTS:
            enabled = self.config.capabilities.get(subject.capability).enabled
            exchange.check_enabled(subject, enabled=enabled)
        request = call.request = codec.decode(subject, data)
        if subject is Subject.RESEARCH:
            response: msgspec.Struct = self._answer_research(request, call.request_id)
        else:
            response = self._answer_tool(subject, request, call.request_id)
        return reply_messages(response, subject, max_payload=budget, encode=codec.encode)

    def _simulated(self, subject: Subject) -> None:
        queue = self._failures.get(subject)
        if not queue:
            return
        failure = queue[0]
        if failure.times is not None:
            failure.times -= 1
            if failure.times <= 0:
                queue.pop(0)
        raise SimulatedError(failure.error)

    def _answer_research(self, request: RepoReaderRequest, request_id: str) -> RepoReaderResponse:
        from worker.testing import checks

        checked = checks.check_research(request, self.config)
        registry = self._registry
        pins = {
            s.name: registry.resolve(s.name, s.revision)
            for s in checks.research_scope(registry, request, checked.limits)
        }
        required = request.license_constraints.require_license
        omitted = checks.omit_unlicensed(
            {n: p.repo.license for n, p in pins.items()}, required=required
        )
        pins = {n: p for n, p in pins.items() if n not in {o.repo for o in omitted}}
        self._simulated(Subject.RESEARCH)
        candidates = list(self._research(request) if self._research else self._artifacts)
        for artifact in candidates:
            if not isinstance(artifact, ResearchArtifact):
                raise MockConfigurationError(f"a research candidate is a {type(artifact).__name__}")
        limits = checked.limits
        extensions = request.file_constraints.allowed_extensions
        wanted = None if extensions is None else {e.lower() for e in extensions}
        share = min(limits.max_excerpts_per_repo, limits.max_total_excerpts)
        refused: set[str] = set()
        chosen: list[ResearchArtifact] = []
        for name, pinned in pins.items():
            found = sorted(
                (
                    a
                    for a in candidates
                    if a.repo == name
                    and a.commit == pinned.commit
                    and (wanted is None or PurePosixPath(a.path).suffix.lower() in wanted)
                ),
                key=lambda a: (-a.score, a.path, _span(a)[0]),
            )
            taken = [
                a
                for a in found
                if checks.license_admits(
                    None if a.license == NO_LICENSE else a.license,
                    checked.policy,
                    require_license=required,
                    refused=refused,
                )
            ][:share]
            chosen += taken
        chosen = sorted(chosen, key=lambda a: (-a.score, a.repo, a.path, _span(a)[0]))
        chosen = chosen[: limits.max_total_excerpts]
        if not chosen and refused:
            raise checks.licenses_not_allowed(refused)
        weight = checks.line_weight(checked.weights)
        artifacts = [
            cut for a in chosen if (cut := _cut(a, limits.max_excerpt_chars, weight)) is not None
        ]
        artifacts.sort(key=lambda a: (-a.score, a.repo, a.path, a.excerpt_span))
        return RepoReaderResponse(
            request_id=request_id,
            resolved=tuple(
                ResolvedRepo(repo=name, commit=p.commit, ref=p.ref, license=p.repo.license)
                for name, p in pins.items()
            ),
            artifacts=tuple(artifacts),
            omitted=omitted,
        )

    def _answer_tool(self, subject: Subject, request: Any, request_id: str) -> msgspec.Struct:
        from worker.testing import checks

        cap = (
            checks.check_tool(subject, request, self.config.tools)
            if subject in WORKER_SUBJECTS
            else None
        )
        fill: dict[str, Any] = {}
        if subject is Subject.GRAPH_DIFF:
            name = self._registry.lookup(request.repo, field="repo").name
            base = self._registry.resolve(name, request.base)
            head = self._registry.resolve(name, request.head)
            fill = {"repo": name, "base_commit": base.commit, "head_commit": head.commit}
        elif subject is Subject.REPO_STATUS:
            name = self._registry.lookup(request.repo, field="repo").name
            fill = {"repo": name, **_status(self._registry.state(name))}
        elif subject in WORKER_SUBJECTS:
            pinned = self._registry.pin(request.repo, request.revision)
            if getattr(request, "require_license", False):
                checks.check_root_license(pinned.repo.name, pinned.repo.license, required=True)
            fill = {"repo": pinned.repo.name, "commit": pinned.commit, "ref": pinned.ref}
            if subject in (Subject.CODE_READ, Subject.CODE_LIST):
                fill["path"] = request.path
        self._simulated(subject)
        response_type = MESSAGES[subject][1]
        configured = self._answers.get(subject)
        if configured is None:
            response = response_type(request_id=request_id)
        elif callable(configured):
            response = configured(request)
            self._check_response(subject, response)
        else:
            response = configured
        return _shape(
            response,
            request_id=request_id,
            fill=fill,
            cap=cap,
            lists=_CAPPED.get(subject, ()),
            mark_truncated=subject in _CUT_MEANS_TRUNCATED,
        )

    @staticmethod
    def _check_response(subject: Subject, response: object) -> None:
        expected = MESSAGES[subject][1]
        if not isinstance(response, expected):
            raise MockConfigurationError(
                f"{subject.value} answers with a {expected.__name__}, "
                f"not a {type(response).__name__}"
            )


class MockRepoReaderClient(RepoReaderAPI):
    """RepoReaderClient's API over a MockRepoReader: requests are encoded and answers read by
    the real client's code. `timeout` is accepted and ignored: the mock answers at once."""

    def __init__(self, reader: MockRepoReader, *, json: bool = False) -> None:
        self.reader = reader
        self._json = json
        self.closed = False

    def handle_error(self, exc: Exception) -> None:
        """As RepoReaderClient's; the mock has no connection to report errors from."""

    async def close(self) -> None:
        self.closed = True

    async def call(
        self,
        subject: Subject,
        request: msgspec.Struct,
        response_type: type[ResponseT],
        *,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> list[ResponseT]:
        """Send `request` on `subject` and return every message of its answer, in order."""
        rid = request_id or uuid.uuid4().hex
        reply = self.reader.answer(
            subject,
            encode_request(request, json=self._json),
            headers=request_headers(rid, json=self._json),
        )
        reader = AnswerReader(response_type, json=self._json, request_id=rid)
        for message in reply.messages:
            if reader.take(message):
                return reader.batches
        raise NoAnswer(
            f"no complete answer to {subject.capability}",
            request_id=rid,
            batches_received=len(reader.batches),
        )


def _span(artifact: ResearchArtifact) -> tuple[int, int]:
    start, end = artifact.excerpt_span[1:].split("-L")
    return int(start), int(end)


def _cut(
    artifact: ResearchArtifact, max_chars: int, weight: Callable[[str], float]
) -> ResearchArtifact | None:
    """The artifact with its excerpt cut to `max_chars` as the service cuts one (the best
    window of whole lines); None when not even one line fits."""
    lines = artifact.excerpt.split("\n")
    excerpt = cut_excerpt(lines, 1, len(lines), max_chars, weight)
    if excerpt is None:
        return None
    if not excerpt.truncated:
        return artifact
    first = _span(artifact)[0]
    start, end = first + excerpt.start - 1, first + excerpt.end - 1
    lines_qualifier = f";lines={start}" if start == end else f";lines={start}-{end}"
    return msgspec.structs.replace(
        artifact,
        excerpt=excerpt.text,
        excerpt_span=f"L{start}-L{end}",
        truncated=True,
        swhid=_LINES.sub(lines_qualifier, artifact.swhid),
    )


def _status(repo: MockRepo) -> dict[str, Any]:
    return {
        "default_ref": repo.default_ref,
        "head": repo.head_commit,
        "indexed": True,
        "indexed_commit": repo.head_commit,
        "code_search_indexed": True,
        "license": repo.license,
        "license_source": repo.license_source if repo.license else None,
    }


def _shape(
    response: msgspec.Struct,
    *,
    request_id: str,
    fill: Mapping[str, Any],
    cap: int | None,
    lists: Sequence[str],
    mark_truncated: bool,
) -> msgspec.Struct:
    """`response` as one whole answer to `request_id`: the envelope reset, the fields the
    service always sets filled in where left at their defaults, its lists capped."""
    changes: dict[str, Any] = {"request_id": request_id, "batch": 0, "last": True, "errors": ()}
    defaults = type(response)(request_id=request_id)
    for name, value in fill.items():
        if getattr(response, name) == getattr(defaults, name):
            changes[name] = value
    if cap is not None:
        for name in lists:
            items = getattr(response, name)
            if len(items) > cap:
                changes[name] = tuple(items[:cap])
                if mark_truncated:
                    changes["truncated"] = True
        if "total" in response.__struct_fields__ and "entries" in changes:
            changes["total"] = cap
    return msgspec.structs.replace(response, **changes)
