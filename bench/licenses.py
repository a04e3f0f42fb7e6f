"""License benchmark: repo-reader's license detection beside ScanCode Toolkit and askalono alone.

    python -m bench.licenses [--work DIR] [--scancode-venv DIR] [--no-scancode] [--limit N]

The cases (`bench/cases/licenses.json`) name files of pinned PyPI sdists, where each goes in a
test repository, the expected SPDX expression (null: no license) and where that expectation
came from. The sdists are downloaded (sha256 checked) into `<work>/sdists`; a case's
`transform` rewrites its text deterministically (a renamed project, a cut or shuffled text).

Each case becomes a small git repository: repo-reader answers with `LicenseResolver` (the
root's license, or a target file's), a fresh resolver per case. askalono alone identifies each
license file (score >= 0.9, several combined with AND: what repo-reader did before). ScanCode
(`scancode-toolkit`, in its own venv, created on first use with pinned heavy dependencies
kept out of the project's) detects the licenses of the same files; its answer is the AND of
the key files' detections (license files and package manifests), or the target file's.

An answer is correct when it is the expected expression (license_expression's equivalence,
with GNU ids compared without their version grant: a license text does not say whether later
versions are granted); none when there is no answer where a license exists; wrong otherwise,
a license where none exists included. Time is per case, the one-time loading left out.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import random
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pygit2

from bench.tables import render
from worker.licenses import LicenseResolver
from worker.licenses.expressions import LICENSING_LOCK, normalise_expression, spdx_licensing
from worker.licenses.identify import (
    IDENTIFY_THRESHOLD,
    best_license_match,
    is_license_file_name,
    license_file_text,
)
from worker.logs import configure_logging

MANIFEST = Path(__file__).resolve().parent / "cases" / "licenses.json"
DEFAULT_WORK = Path(__file__).resolve().parent / ".corpora" / "licenses"
DEFAULT_SCANCODE_VENV = Path(__file__).resolve().parent / ".work" / "scancode-venv"
SCANCODE_REQUIREMENTS = ("scancode-toolkit==32.5.0", "pluggy<1.6")
"""plugincode (a ScanCode dependency) finds no hooks with pluggy 1.6 and later."""
TOOLS = ("repo-reader", "scancode", "askalono")
_GNU_GRANT = re.compile(r"\b(A?L?GPL-[0-9.]+)(?:-only|-or-later)\b")
_METADATA = frozenset({"pyproject.toml", "setup.cfg", "Cargo.toml", "package.json"})


@dataclasses.dataclass(frozen=True)
class Case:
    """One case of the manifest, its files' content ready."""

    id: str
    category: str
    files: dict[str, bytes]
    expected: str | None
    provenance: str
    target: str = ""


@dataclasses.dataclass
class Outcome:
    """What one tool answered for one case and how long it took."""

    answer: str | None
    seconds: float


def load_cases(work: Path, *, limit: int | None = None) -> list[Case]:
    """Every case of the manifest, downloading the sdists it names (once)."""
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    cases = manifest["cases"][:limit] if limit else manifest["cases"]
    archives: dict[str, dict[str, bytes]] = {}
    loaded = []
    for raw in cases:
        sdist = raw["sdist"]
        if sdist not in archives:
            archives[sdist] = _members(_download(work, sdist, manifest["sdists"][sdist]))
        files = {}
        for spec in raw["files"]:
            data = archives[sdist][spec["member"]]
            files[spec["path"]] = _transform(data, raw.get("transform"), seed=raw["id"])
        loaded.append(
            Case(
                id=raw["id"],
                category=raw["category"],
                files=files,
                expected=raw["expected"],
                provenance=raw["provenance"],
                target=raw.get("target", ""),
            )
        )
    return loaded


def _download(work: Path, name: str, pin: dict[str, str]) -> Path:
    path = work / "sdists" / name
    if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == pin["sha256"]:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with urllib.request.urlopen(pin["url"], timeout=120) as response:
        data = response.read()
    if hashlib.sha256(data).hexdigest() != pin["sha256"]:
        raise SystemExit(f"{name}: sha256 does not match the manifest's pin")
    path.write_bytes(data)
    return path


def _members(path: Path) -> dict[str, bytes]:
    """The small regular files of an sdist (license files, metadata, a few sources)."""
    found: dict[str, bytes] = {}
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if not info.is_dir() and info.file_size < 1_000_000:
                    found[info.filename] = archive.read(info)
        return found
    with tarfile.open(path) as archive:
        for member in archive:
            if member.isfile() and member.size < 1_000_000:
                handle = archive.extractfile(member)
                if handle is not None:
                    found[member.name] = handle.read()
    return found


def _transform(data: bytes, transform: dict[str, str] | None, *, seed: str) -> bytes:
    """Rewrite a text as the manifest says, the same way on every machine."""
    if transform is None:
        return data
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines()
    match transform["kind"]:
        case "rename":
            project = transform["project"]
            text = re.sub(
                r"(?im)^(\W*)copyright\s+(?:\(c\)|©|[0-9]{4}).*$",
                r"\1Copyright (c) 2031 The Example Maintainers",
                text,
            )
            text = re.sub(re.escape(project), "Examplar", text, flags=re.IGNORECASE)
        case "truncate":
            text = "\n".join(lines[: max(1, len(lines) * 2 // 5)])
        case "head":
            text = "\n".join(lines[:4])
        case "shuffle":
            words = text.split()
            random.Random(seed).shuffle(words)
            text = "\n".join(" ".join(words[i : i + 12]) for i in range(0, len(words), 12))
        case other:
            raise SystemExit(f"unknown transform {other!r}")
    return text.encode("utf-8")


def comparable(expression: str | None) -> str | None:
    """An expression as the bench compares it: canonical, GNU ids without their grant."""
    if expression is None:
        return None
    normal = normalise_expression(expression.strip("()")) or expression
    return _GNU_GRANT.sub(r"\1", normal)


def verdict(expected: str | None, answer: str | None) -> str:
    """correct, none (no answer where a license exists) or wrong."""
    if answer is None:
        return "correct" if expected is None else "none"
    if expected is None:
        return "wrong"
    want, got = comparable(expected), comparable(answer)
    if want == got:
        return "correct"
    try:
        with LICENSING_LOCK:
            same = spdx_licensing().is_equivalent(want, got)
    except Exception:  # an answer license_expression cannot parse is not the expected one
        same = False
    return "correct" if same else "wrong"


def run_repo_reader(case: Case, root: Path) -> Outcome:
    """repo-reader's answer: the resolver on a fresh repository holding the case's files."""
    repo = pygit2.init_repository(str(root), bare=True)
    tree = _tree(repo, case.files)
    started = time.perf_counter()
    resolver = LicenseResolver(repo)
    if case.target:
        blob = tree / case.target
        info = resolver.for_file(tree, case.target, str(blob.id), blob.data)
    else:
        info = resolver.for_root(tree)
    return Outcome(info.spdx if info else None, time.perf_counter() - started)


def run_askalono(case: Case) -> Outcome:
    """askalono alone: each license file (or the target) at the product's old threshold, AND."""
    names = [case.target] if case.target else sorted(n for n in case.files if _is_license(n))
    started = time.perf_counter()
    found = []
    for name in names:
        text = license_file_text(case.files[name])
        match = best_license_match(text) if text else None
        if match is not None and match[1] >= IDENTIFY_THRESHOLD:
            found.append(match[0])
    answer = " AND ".join(sorted(set(found))) if found else None
    return Outcome(answer, time.perf_counter() - started)


def _is_license(path: str) -> bool:
    return "/" not in path and is_license_file_name(path)


def _tree(repo: pygit2.Repository, files: dict[str, bytes]) -> pygit2.Tree:
    index = pygit2.Index()
    for path, data in sorted(files.items()):
        index.add(pygit2.IndexEntry(path, repo.create_blob(data), pygit2.enums.FileMode.BLOB))
    tree = repo[index.write_tree(repo)]
    assert isinstance(tree, pygit2.Tree)
    return tree


_SCANCODE_SCRIPT = r"""
import json, sys, time
from scancode.api import get_licenses
get_licenses(sys.argv[2])  # loads the license index once, before anything is timed
out = {}
for case in json.load(open(sys.argv[1])):
    started = time.perf_counter()
    found = []
    for path in case["paths"]:
        detected = get_licenses(path, include_text=False).get("detected_license_expression_spdx")
        if detected:
            found.append(detected)
    out[case["id"]] = {"found": found, "seconds": time.perf_counter() - started}
print(json.dumps(out))
"""


def ensure_scancode(venv: Path) -> Path:
    """The Python of a venv with ScanCode Toolkit, created (pinned) when missing."""
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import scancode.api"]
    if python.exists() and subprocess.run(probe, capture_output=True, check=False).returncode == 0:
        return python
    print(f"installing ScanCode Toolkit into {venv} (once) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *SCANCODE_REQUIREMENTS], check=True
    )
    return python


def run_scancode(cases: Sequence[Case], python: Path, scratch: Path) -> dict[str, Outcome]:
    """ScanCode's answers: the AND of its detections in each case's key files."""
    plan = []
    for number, case in enumerate(cases):
        directory = scratch / f"case{number}"
        names = (
            [case.target]
            if case.target
            else sorted(n for n in case.files if _is_license(n) or n in _METADATA)
        )
        for name, data in case.files.items():
            (directory / name).parent.mkdir(parents=True, exist_ok=True)
            (directory / name).write_bytes(data)
        plan.append({"id": case.id, "paths": [str(directory / n) for n in names]})
    plan_file = scratch / "plan.json"
    plan_file.write_text(json.dumps(plan))
    warmup = scratch / "warmup.txt"
    warmup.write_text("MIT License\n")
    result = subprocess.run(
        [str(python), "-c", _SCANCODE_SCRIPT, str(plan_file), str(warmup)],
        capture_output=True,
        text=True,
        check=True,
    )
    raw: dict[str, Any] = json.loads(result.stdout)
    return {
        case_id: Outcome(_and_unique(value["found"]), value["seconds"])
        for case_id, value in raw.items()
    }


def _and_unique(expressions: list[str]) -> str | None:
    unique = list(dict.fromkeys(expressions))
    if not unique:
        return None
    return " AND ".join(f"({e})" if " " in e else e for e in unique)


def measure(
    cases: Sequence[Case], *, scancode: Callable[[Sequence[Case]], dict[str, Outcome]] | None
) -> dict[str, dict[str, Outcome]]:
    """Each tool's outcome for each case, by tool then case id."""
    results: dict[str, dict[str, Outcome]] = {tool: {} for tool in TOOLS}
    best_license_match("MIT License\n")  # askalono's first call pays no extra start-up
    with tempfile.TemporaryDirectory(prefix="bench-licenses-") as scratch:
        for number, case in enumerate(cases):
            results["repo-reader"][case.id] = run_repo_reader(case, Path(scratch) / f"{number}.git")
            results["askalono"][case.id] = run_askalono(case)
    if scancode is not None:
        results["scancode"] = scancode(cases)
    else:
        del results["scancode"]
    return results


def table(cases: Sequence[Case], results: dict[str, dict[str, Outcome]]) -> str:
    """One row per category and a total: correct / none / wrong and ms per case, per tool."""
    tools = [tool for tool in TOOLS if tool in results]
    header = ["category", "cases"]
    for tool in tools:
        header += [f"{tool} ok/none/wrong", f"{tool} ms"]
    rows = [header]
    categories = list(dict.fromkeys(case.category for case in cases))
    for category in [*categories, "all"]:
        chosen = [c for c in cases if category in ("all", c.category)]
        row = [category, str(len(chosen))]
        for tool in tools:
            counts = {"correct": 0, "none": 0, "wrong": 0}
            for case in chosen:
                counts[verdict(case.expected, results[tool][case.id].answer)] += 1
            seconds = sum(results[tool][c.id].seconds for c in chosen) / len(chosen)
            row += [
                f"{counts['correct']}/{counts['none']}/{counts['wrong']}",
                f"{seconds * 1000:.1f}",
            ]
        rows.append(row)
    licensed = [c for c in cases if c.expected is not None]
    row = ["correct where a license exists", str(len(licensed))]
    for tool in tools:
        right = sum(verdict(c.expected, results[tool][c.id].answer) == "correct" for c in licensed)
        row += [f"{100 * right / max(1, len(licensed)):.1f}%", ""]
    rows.append(row)
    return render(rows)


def disagreements(cases: Sequence[Case], results: dict[str, dict[str, Outcome]]) -> list[str]:
    """Every case where a peer's answer is not repo-reader's, with the expected one."""
    lines = []
    peers = [tool for tool in TOOLS[1:] if tool in results]
    for case in cases:
        ours = results["repo-reader"][case.id].answer
        theirs = {peer: results[peer][case.id].answer for peer in peers}
        if all(comparable(answer) == comparable(ours) for answer in theirs.values()):
            continue
        others = "  ".join(f"{peer}={answer}" for peer, answer in theirs.items())
        lines.append(
            f"{case.id} [{case.category}] expected={case.expected} "
            f"repo-reader={ours} ({verdict(case.expected, ours)})  {others}"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print its table, then every disagreement with a peer."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--scancode-venv", type=Path, default=DEFAULT_SCANCODE_VENV)
    parser.add_argument("--no-scancode", action="store_true")
    parser.add_argument("--limit", type=int, default=None, help="only the first N cases")
    args = parser.parse_args(argv)
    configure_logging("warning")
    cases = load_cases(args.work, limit=args.limit)
    scancode = None
    if not args.no_scancode:
        python = ensure_scancode(args.scancode_venv)

        def scancode(chosen: Sequence[Case]) -> dict[str, Outcome]:
            with tempfile.TemporaryDirectory(prefix="bench-scancode-") as scratch:
                return run_scancode(chosen, python, Path(scratch))

    results = measure(cases, scancode=scancode)
    print(table(cases, results))
    wrong = [
        f"{case.id}: expected {case.expected}, got {results['repo-reader'][case.id].answer}"
        for case in cases
        if verdict(case.expected, results["repo-reader"][case.id].answer) == "wrong"
    ]
    print(f"\nrepo-reader wrong: {len(wrong)}")
    for line in wrong:
        print(f"  {line}")
    lines = disagreements(cases, results)
    print(f"\ncases where a peer disagrees with repo-reader: {len(lines)}")
    for line in lines:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
