"""Tests of the license compatibility judgements and their source, licensecheck's matrix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from worker.licenses.compatibility import SPDX_TO_MATRIX, licensecheck_matrix, may_reuse
from worker.licenses.policy import parse_license_expression

ROOT = Path(__file__).resolve().parents[3]


def run_python(code: str, home: Path) -> str:
    """Run `code` in a fresh interpreter whose home and cache directories are `home`."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("spdx_id", "matrix_license"),
    [
        ("LGPL-2.1-only", "LGPL_2"),
        ("LGPL-2.1-or-later", "LGPL_2_PLUS"),
        ("0BSD", "PUBLIC"),
        ("MIT-0", "PUBLIC"),
        ("BSD-3-Clause", "BSD"),
        ("Apache-2.0", "APACHE"),
        ("GPL-2.0-only WITH Linux-syscall-note", "GPL_2"),
        ("GPL-2.0", "GPL_2"),
        ("GPL-2.0+", "GPL_2_PLUS"),
        ("AGPL-3.0-only", "AGPL_3_PLUS"),
        ("BSD-4-Clause", None),
        ("MPL-1.1", None),
        ("GPL-1.0-or-later", None),
        ("CNRI-Python", None),
        ("Apache-1.1", None),
    ],
)
def test_spdx_ids_map_exactly(spdx_id: str, matrix_license: str | None) -> None:
    """Ids map onto the matrix by their exact normalised id, never by a substring."""
    normalised = parse_license_expression(spdx_id)
    assert isinstance(normalised, str)
    assert SPDX_TO_MATRIX.get(normalised) == matrix_license


def test_unmapped_license_is_compatible_only_with_itself() -> None:
    """A license the matrix does not know is reusable under nothing but its own terms."""
    assert may_reuse("CDDL-1.0", "CDDL-1.0")
    assert not may_reuse("CDDL-1.0", "GPL-3.0-or-later")
    assert not may_reuse("MIT", "CDDL-1.0")


def test_matrix_agrees_with_licensecheck(tmp_path: Path) -> None:
    """The matrix read from the data file gives licensecheck's own verdict for every pair."""
    output = run_python(
        """
        import json
        from loguru import logger
        logger.disable("licensecheck")
        from licensecheck.license_matrix import depCompatWMyLice
        from licensecheck.types import License
        names = [lic for lic in License if lic not in (License.UNKNOWN, License.NO_LICENSE)]
        pairs = [[w.name, s.name] for w in names for s in names if depCompatWMyLice(w, [s])]
        print(json.dumps({"names": [lic.name for lic in names], "pairs": pairs}))
        """,
        tmp_path,
    )
    theirs = json.loads(output)
    names = set(theirs["names"])
    ours = {pair for pair in licensecheck_matrix() if pair[0] in names and pair[1] in names}
    assert ours == {(work, source) for work, source in theirs["pairs"]}
    assert set(SPDX_TO_MATRIX.values()) <= names


def test_licensecheck_lookup_traps(tmp_path: Path) -> None:
    """licensecheck's own substring lookup misreads these ids, which is why it is not used."""
    output = run_python(
        """
        import json
        from loguru import logger
        logger.disable("licensecheck")
        from licensecheck.license_matrix import licenseType
        from licensecheck.types import ucstr
        ids = ["LGPL-2.1-only", "0BSD", "BSD-4-Clause", "MPL-1.1", "AGPL-3.0-only", "EPL-2.0"]
        print(json.dumps({i: [lic.name for lic in licenseType(ucstr(i))] for i in ids}))
        """,
        tmp_path,
    )
    assert json.loads(output) == {
        "LGPL-2.1-only": ["LGPL_X"],
        "0BSD": ["BSD"],
        "BSD-4-Clause": ["BSD"],
        "MPL-1.1": ["MPL"],
        "AGPL-3.0-only": ["AGPL_3_PLUS"],
        "EPL-2.0": ["UNKNOWN"],
    }


def test_policy_neither_imports_licensecheck_nor_writes(tmp_path: Path) -> None:
    """Judging compatibility imports no licensecheck code and writes nothing to home or cache."""
    home = tmp_path / "home"
    home.mkdir()
    output = run_python(
        """
        import json, sys
        from worker.licenses import LicensePolicy
        policy = LicensePolicy.from_constraints(["MIT", "Apache-2.0"], "GPL-3.0-only")
        loaded = [m for m in sys.modules if m.split(".")[0] in {"licensecheck", "loguru"}]
        print(json.dumps({"admits": policy.admits("MIT OR GPL-2.0-only"), "loaded": loaded}))
        """,
        home,
    )
    assert json.loads(output) == {"admits": True, "loaded": []}
    assert list(home.iterdir()) == []
