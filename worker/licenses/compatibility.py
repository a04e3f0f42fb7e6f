"""Whether code under one license may be reused in a work under another.

The judgements come from licensecheck's compatibility matrix (`matrix.csv`, rows: the
work's license, columns: the reused code's license), read as a data file. licensecheck's
code is not imported: importing any part of it runs `licensecheck/__init__.py`, which
opens an HTTP cache (`~/.cache/licensecheck.sqlite`) for writing, and a worker must
write nothing. Its name lookup is not used either: it matches by substring, in dict
order, so `0BSD` and `BSD-4-Clause` become BSD, `MIT-0` becomes MIT, `LGPL-2.1-only`
becomes "LGPL, version unknown", `MPL-1.1` becomes MPL (2.0's row), `CNRI-Python`
becomes PSF, `AGPL-3.0-only` becomes AGPL-3.0-or-later and `EPL-2.0` is unknown. Here
SPDX ids map onto the matrix's licenses exactly, by `SPDX_TO_MATRIX`; any other id is
compatible with nothing but itself.

The matrix judges depending on a library; an excerpt is copied code, so two of its
verdicts are narrowed:
- weak-copyleft code (LGPL, MPL, EPL) keeps its license when copied, so it is not
  reusable in a permissive or public-domain work (the matrix allows linking it);
- GPL-2.0-only code cannot be combined with AGPL-3.0 (the matrix's AGPL row says yes).
"""

from __future__ import annotations

import csv
import functools
import importlib.metadata
import io
from pathlib import Path

from worker.errors import InternalError

SPDX_TO_MATRIX: dict[str, str] = {
    "CC0-1.0": "PUBLIC",
    "CC-PDDC": "PUBLIC",
    "0BSD": "PUBLIC",
    "MIT-0": "PUBLIC",
    "Unlicense": "UNLICENSE",
    "WTFPL": "UNLICENSE",
    "MIT": "MIT",
    "BSL-1.0": "BOOST",
    "BSD-2-Clause": "BSD",
    "BSD-3-Clause": "BSD",
    "ISC": "ISC",
    "NCSA": "NCSA",
    "PSF-2.0": "PSFL",
    "Python-2.0": "PSFL",
    "Python-2.0.1": "PSFL",
    "Apache-2.0": "APACHE",
    "EPL-1.0": "ECLIPSE",
    "EPL-2.0": "ECLIPSE",
    "AFL-1.1": "ACADEMIC_FREE",
    "AFL-1.2": "ACADEMIC_FREE",
    "AFL-2.0": "ACADEMIC_FREE",
    "AFL-2.1": "ACADEMIC_FREE",
    "AFL-3.0": "ACADEMIC_FREE",
    "LGPL-2.0-only": "LGPL_2",
    "LGPL-2.1-only": "LGPL_2",
    "LGPL-2.0-or-later": "LGPL_2_PLUS",
    "LGPL-2.1-or-later": "LGPL_2_PLUS",
    "LGPL-3.0-only": "LGPL_3",
    "LGPL-3.0-or-later": "LGPL_3_PLUS",
    "GPL-2.0-only": "GPL_2",
    "GPL-2.0-or-later": "GPL_2_PLUS",
    "GPL-3.0-only": "GPL_3",
    "GPL-3.0-or-later": "GPL_3_PLUS",
    "AGPL-3.0-only": "AGPL_3_PLUS",
    "AGPL-3.0-or-later": "AGPL_3_PLUS",
    "MPL-2.0": "MPL",
    "EUPL-1.1": "EU",
    "EUPL-1.2": "EU",
}
"""SPDX id (as license_expression normalises it) -> the matrix license it is."""

_WEAK_COPYLEFT = frozenset(
    {"LGPL_2", "LGPL_3", "LGPL_2_PLUS", "LGPL_3_PLUS", "LGPL_X", "MPL", "ECLIPSE"}
)
_COPYLEFT = _WEAK_COPYLEFT | {
    "GPL_2",
    "GPL_3",
    "GPL_2_PLUS",
    "GPL_3_PLUS",
    "GPL_X",
    "AGPL_3_PLUS",
    "EU",
}
_MATRIX_FILE = "licensecheck/license_matrix/matrix.csv"
_NEVER_REUSABLE = frozenset({("AGPL_3_PLUS", "GPL_2")})
"""(work, reused code) pairs the matrix allows but copying does not."""


def has_compatibility_data(spdx_id: str) -> bool:
    """Tell whether the matrix knows the license `spdx_id` (a normalised SPDX id)."""
    return spdx_id in SPDX_TO_MATRIX


def may_reuse(source_id: str, work_id: str) -> bool:
    """Tell whether code under `source_id` may be reused in a work under `work_id`."""
    if source_id == work_id:
        return True
    source = SPDX_TO_MATRIX.get(source_id)
    work = SPDX_TO_MATRIX.get(work_id)
    if source is None or work is None:
        return False
    if (work, source) in _NEVER_REUSABLE:
        return False
    if source in _WEAK_COPYLEFT and work not in _COPYLEFT:
        return False
    return (work, source) in licensecheck_matrix()


@functools.cache
def licensecheck_matrix() -> frozenset[tuple[str, str]]:
    """Return the (work, reused code) pairs licensecheck's matrix marks compatible."""
    try:
        located = importlib.metadata.distribution("licensecheck").locate_file(_MATRIX_FILE)
        text = Path(str(located)).read_text(encoding="utf-8")
    except (importlib.metadata.PackageNotFoundError, OSError) as error:
        raise InternalError(
            "licensecheck's compatibility matrix is not installed", file=_MATRIX_FILE
        ) from error
    rows = list(csv.reader(io.StringIO(text)))
    columns = rows[0][1:]
    known = set(columns) & {row[0] for row in rows[1:]}
    missing = set(SPDX_TO_MATRIX.values()) - known
    if missing:
        raise InternalError(
            "licensecheck's compatibility matrix lacks licenses", missing=sorted(missing)
        )
    return frozenset(
        (row[0], column)
        for row in rows[1:]
        for column, cell in zip(columns, row[1:], strict=True)
        if cell.strip() == "1"
    )
