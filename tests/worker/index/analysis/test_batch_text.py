"""A batch's joined text: where blobs and rows start, which rows are blank, what leads a row."""

from __future__ import annotations

import numpy as np

from worker.index.analysis.batch_text import BatchLines, BatchText, line_starts


def test_blobs_start_after_the_newline_that_joins_them() -> None:
    """Each blob's bytes, first row and row starts are found in the joined text."""
    datas = [b"x\ny", b"z"]
    text = BatchText(b"\n".join(datas), datas)
    assert [text.data[s:e] for s, e in zip(text.starts, text.ends, strict=True)] == datas
    assert text.row0.tolist() == [0, 2]
    assert text.row_start(np.arange(3, dtype=np.int64)).tolist() == [0, 2, 4]


def test_line_starts_split_on_newlines_only() -> None:
    """A carriage return starts no line; a trailing newline starts an empty last one."""
    assert line_starts(b"a\r\nb\n").tolist() == [0, 3, 5]


def test_rows_know_their_blankness_and_nearest_filled_rows() -> None:
    """Rows of spaces are blank; each row knows the next and the last filled row around it."""
    lines = BatchLines(b"a = 1\n\n  \nb\n")
    assert lines.blank == [False, True, True, False, True]
    assert lines.line(3) == b"b"
    assert lines.next_filled.tolist()[:4] == [0, 3, 3, 3]
    assert lines.prev_filled.tolist() == [0, 0, 0, 3, 3]


def test_a_run_of_comments_stops_at_code_and_at_a_blank_row() -> None:
    """Comment rows continue the run above them; code and blank rows stop it, but one blank
    row after a block comment's end does not."""
    lines = BatchLines(b"code\n# one\n# two\n\n/* doc */\n\n/* more\n */\n")
    stops = lines.last_stop((b"#", b"/*", b" *")).tolist()
    assert stops[:3] == [0, 0, 0]  # the comments continue the run that code stopped
    assert stops[3] == 3  # a blank row after a line comment stops it
    assert stops[5] == 3  # the blank row after `*/` does not
