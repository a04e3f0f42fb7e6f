"""The compiled loop of postings (numba), apart so that only a build imports numba."""

from __future__ import annotations

from typing import Any

import numpy as np

from worker.index.analysis.compiled import compiled as _compiled


@_compiled()
def unpacked(  # noqa: PLR0917 (numba compiles positional parameters only)
    packed: Any,
    n_terms: int,
    term_shift: int,
    text_shift: int,
    field_shift: int,
    count_limit: int,
    sym_limit: int,
) -> Any:
    # Postings from sorted packed rows (term, text, field, count; see `postings`): the
    # counts of a (term, text, field) summed (clipped at count_limit), and a symbol row
    # (field 1) joined to the body row of its (term, text) just before it, or alone with
    # a body count of 0. Returns each row's text, body and symbol counts, and each term's
    # number of rows. The texts are written over the packed rows already read (a text
    # takes half a packed row's bytes, and no row moves forward): no buffer that size.
    n = len(packed)
    texts = packed.view(np.int32)
    tf_body = np.zeros(n, np.uint16)
    tf_sym = np.zeros(n, np.uint8)
    counts = np.zeros(n_terms, np.int64)
    field_mask = np.uint64(1) << np.uint64(field_shift)
    text_mask = (np.uint64(1) << np.uint64(term_shift - text_shift)) - np.uint64(1)
    count_mask = np.uint64(count_limit)
    rows = 0
    last_pair = np.uint64(0)
    i = 0
    while i < n:
        row = packed[i]
        key = row >> np.uint64(field_shift)
        total = row & count_mask
        i += 1
        while i < n and packed[i] >> np.uint64(field_shift) == key:
            total += packed[i] & count_mask
            i += 1
        total = min(total, count_mask)
        pair = row >> np.uint64(text_shift)
        if row & field_mask:
            if rows and pair == last_pair:
                tf_sym[rows - 1] = min(total, np.uint64(sym_limit))
                continue
            tf_sym[rows] = min(total, np.uint64(sym_limit))
        else:
            tf_body[rows] = total
        texts[rows] = np.int32(pair & text_mask)
        counts[row >> np.uint64(term_shift)] += 1
        last_pair = pair
        rows += 1
    return texts[:rows], tf_body[:rows], tf_sym[:rows], counts
