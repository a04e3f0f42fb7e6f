"""The SWE-bench mode end to end on a tiny dataset: research over a real NATS server and worker,
the bm25s baseline and the ablation, all scored the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import swebench
from bench.quality import main
from tests.support.gitrepos import MIT_LICENSE, Content, commit, init_repo

FILES: dict[str, Content | None] = {
    "LICENSE": MIT_LICENSE,
    "tiny/units.py": (
        "class Quantity:\n"
        '    """A value with a unit."""\n\n'
        "    def to_value(self, unit):\n"
        "        return self.value * unit.scale\n"
    ),
    "tiny/io.py": "def read_table(path):\n    return open(path).read().split()\n",
    "tiny/printing.py": "def latex(expr):\n    return '\\\\frac{%s}' % expr\n",
    "tox.ini": "[tox]\nenvlist = numpy\n",
}


def _dataset(tmp_path: Path) -> Path:
    repo = init_repo(tmp_path / "tiny.git", bare=True)
    commit(repo, FILES, message="initial import")
    base = commit(
        repo, {"tiny/printing.py": "def latex(expr):\n    return str(expr)\n"}, message="Fix latex"
    )
    rows = [
        {
            "instance_id": "tiny-1",
            "repo": "acme/tiny",
            "problem_statement": "`Quantity.to_value` returns the wrong value for scaled units",
            "gold_files": ["tiny/units.py"],
            "mirror": str(tmp_path / "tiny.git"),
            "commit": base,
        },
        {
            "instance_id": "tiny-2",
            "repo": "acme/tiny",
            "problem_statement": (
                "latex printing of fractions is wrong\n\nnumpy: 1.2.3\nscipy: 1.0\ntiny: 0.1\n"
            ),
            "gold_files": ["tiny/printing.py", "tiny/io.py"],
            "mirror": str(tmp_path / "tiny.git"),
            "commit": base,
        },
    ]
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return dataset


def test_figures_from_ranks() -> None:
    """Acc@k needs every gold file within k; MRR takes the first gold file."""
    instance = swebench.Instance(
        id="x", repo="a/b", mirror="", commit="", query="q", gold=("a.py", "b.py")
    )
    answers = [swebench.Ranked(instance, ["c.py", "a.py", "b.py"], 0.1)]
    figures = swebench.figures(answers)
    assert figures.acc == {1: 0.0, 3: 1.0, 5: 1.0, 10: 1.0}
    assert figures.mrr == 0.5


def test_function_chunks_split_python_by_function() -> None:
    """A Python file becomes its functions plus the rest of the module; other files stay whole."""
    chunks = swebench.function_chunks("m.py", "import os\n\ndef f():\n    return 1\n")
    assert chunks == ["m.py\nimport os\n", "def f():\n    return 1"]
    assert swebench.function_chunks("m.txt", "text") == ["text"]


def test_swebench_mode_runs_both_systems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Research over NATS and the baseline are scored side by side, per slice and repository."""
    dataset = _dataset(tmp_path)
    out = tmp_path / "figures.json"
    code = main(["--swebench", str(dataset), "--work", str(tmp_path / "work"), "--json", str(out)])
    assert code == 0
    table = capsys.readouterr().out
    assert "repo-reader" in table
    assert "bm25s-functions" in table
    assert "multi-file fix" in table
    figures = json.loads(out.read_text())
    answer = figures["repo-reader"][0]
    assert answer["error"] is None
    assert answer["files"][0] == "tiny/units.py"


def test_ablation_switches_each_signal_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ablation prints one row set per signal switched off."""
    dataset = _dataset(tmp_path)
    code = main(["--swebench", str(dataset), "--work", str(tmp_path / "work"), "--ablation"])
    assert code == 0
    table = capsys.readouterr().out
    for name in swebench.ABLATIONS:
        assert name in table
