"""The compiled assembly of outlines (numba), apart so that only a build imports numba."""

from __future__ import annotations

from typing import Any

import numpy as np

from worker.index.analysis.compiled import compiled as _compiled
from worker.index.analysis.trigram_kernels import is_word, word_at

_NEWLINE, _SPACE = 10, 32


@_compiled(nogil=True)
def assembled(a: Any, newlines: Any, segments: Any, files: Any) -> Any:
    # Each file's outline: its kept segments verbatim, each dropped one as one b"\n" (if it
    # held one) or b" ". `segments` are (starts, ends, dropped) of `a`, in order; `files`
    # (starts, first segments, end segments): where each file starts in `a`, and the
    # segments that are its; `newlines` are where every b"\n" of `a` is.
    #
    # Returns the outlines joined, where each starts (one past the last: the end), the
    # file row of each outline row joined, and where each file's rows start.
    starts, ends, dropped = segments
    file_starts, first_segments, end_segments = files
    n_files = len(file_starts)
    text = np.empty(len(a), np.uint8)
    text_at = np.empty(n_files + 1, np.int64)
    rows = np.empty(len(newlines) + n_files, np.int64)
    rows_at = np.empty(n_files + 1, np.int64)
    out, n_rows, k = 0, 0, 0
    for f in range(n_files):
        text_at[f] = out
        rows_at[f] = n_rows
        # Rows count from the file's first: the newlines before it are not its.
        while k < len(newlines) and newlines[k] < file_starts[f]:
            k += 1
        row0 = k
        rows[n_rows] = 0
        n_rows += 1
        for s in range(first_segments[f], end_segments[f]):
            begin, end = starts[s], ends[s]
            if dropped[s]:
                held = False
                while k < len(newlines) and newlines[k] < end:
                    held = True
                    k += 1
                text[out] = _NEWLINE if held else _SPACE
                out += 1
                if held:
                    # The row after a run's separator is the row the run ends on.
                    rows[n_rows] = k - row0
                    n_rows += 1
                continue
            text[out : out + end - begin] = a[begin:end]
            out += end - begin
            while k < len(newlines) and newlines[k] < end:
                k += 1
                rows[n_rows] = k - row0
                n_rows += 1
    text_at[n_files] = out
    rows_at[n_files] = n_rows
    return text[:out], text_at, rows[:n_rows].copy(), rows_at


_OPEN, _CLOSE, _SEMI = 123, 125, 59
_OPEN_PAREN, _CLOSE_PAREN, _EQUALS = 40, 41, 61
_KINDS = np.zeros(256, np.uint8)
"""What the brace scan does at each byte: pass it (0), note a parenthesis (1), or read a
brace or a semicolon (2)."""
_KINDS[[_OPEN_PAREN, _CLOSE_PAREN]] = 1
_KINDS[[_OPEN, _CLOSE, _SEMI]] = 2


@_compiled(inline="always")
def _is_blank(byte: int) -> bool:
    return byte in (0x20, 0x09, 0x0A, 0x0D, 0x0C, 0x0B)


@_compiled(inline="always")
def _outside(q: int, lexemes: Any, lexeme: int, first_lexeme: int, strings: bool) -> Any:
    # The last position at or before `q` in no comment or directive (nor string, with
    # `strings`), -1 past the start, and the last lexeme that starts at or before it:
    # `lexeme` is one that starts at or before `q` (or before `first_lexeme`: none).
    ls, le, is_string = lexemes
    while q >= 0:
        while lexeme >= first_lexeme and ls[lexeme] > q:
            lexeme -= 1
        if lexeme < first_lexeme or q >= le[lexeme] or not (strings or not is_string[lexeme]):
            break
        q = ls[lexeme] - 1
    return q, lexeme


@_compiled()
def _parameters_open(  # noqa: PLR0917 (numba compiles positional parameters only)
    a: Any,
    close: int,
    floor: int,
    last_open: int,
    last_shut: int,
    lexemes: Any,
    lexeme: int,
    first_lexeme: int,
) -> int:
    # The `(` whose group ends at the `)` at `close` (none before `floor`), or -1. Most
    # groups hold no parenthesis: their `(` is the last one before the `)` (`last_open`,
    # outside lexemes, as `last_shut` is the last `)` before it). The others are walked
    # back, counting the parentheses outside lexemes (`lexeme` is the last that starts
    # before `close`).
    if last_open < 0 or last_shut < last_open:
        return last_open
    depth = 1
    q, lexeme = _outside(close - 1, lexemes, lexeme, first_lexeme, True)
    while q >= floor:
        if a[q] == _CLOSE_PAREN:
            depth += 1
        elif a[q] == _OPEN_PAREN:
            depth -= 1
            if depth == 0:
                return int(q)
        q, lexeme = _outside(q - 1, lexemes, lexeme, first_lexeme, True)
    return -1


_ENUM = np.frombuffer(b"enum", np.uint8).reshape(1, 4)
_ENUM_LENGTH = np.array([4], np.int64)


@_compiled()
def _opens_enum(a: Any, before: int, floor: int) -> bool:
    # Whether a `{` whose last byte before (not blank) is at `before` opens an enum's body:
    # `enum` is one of the (up to three) words right before it: `enum {`, `enum name {`,
    # C++'s `enum class name {`. Read on the bytes alone: a comment or directive between
    # the words makes it no enum (kept).
    q = before
    for _ in range(3):
        if q < floor or not is_word(a[q]):
            return False
        end = q + 1
        while q >= floor and is_word(a[q]):
            q -= 1
        if word_at(a, q + 1, end, _ENUM, _ENUM_LENGTH):
            return True
        while q >= floor and _is_blank(a[q]):
            q -= 1
    return False


@_compiled(inline="always")
def _span(counts: Any, marks: Any, start: int, end: int) -> None:
    counts[start] += 1
    counts[end] -= 1
    marks[start] = True
    marks[end] = True


@_compiled(inline="always")
def _before(  # noqa: PLR0917 (numba compiles positional parameters only)
    a: Any, at: int, floor: int, lexemes: Any, lexeme: int, first_lexeme: int
) -> int:
    # Where the last byte before `at` (not before `floor`) is that is not blank and not in
    # a comment or directive (strings count), or -1. `lexeme` is the last lexeme that starts
    # before `at`.
    q, lexeme = _outside(at - 1, lexemes, lexeme, first_lexeme, False)
    while q >= floor:
        if not _is_blank(a[q]):
            return int(q)
        q, lexeme = _outside(q - 1, lexemes, lexeme, first_lexeme, False)
    return -1


@_compiled(nogil=True)
def c_outlined(  # noqa: PLR0915 (one pass over each file)
    a: Any,
    file_starts: Any,
    file_ends: Any,
    lexemes: Any,
    macros: Any,
) -> Any:
    # The outline of each C or C++ file [file_starts[f], file_ends[f]) of `a`: see
    # `outline.c_outlines` for what goes. `lexemes` are (starts, ends, is_string) of every
    # lexeme, in order; `macros` the (head starts, head ends, body starts, ends) of the
    # function-like macros' directives (the body is where their first byte after the head
    # is, or the end).
    #
    # Each span that goes (or stays, or vetoes staying) adds one to a count where it starts
    # and takes it back where it ends, and marks both places; a byte goes when a drop
    # covers it, unless a keep does and no veto. Runs that go become one separator each,
    # b"\n" when they held one.
    #
    # Returns the outlines joined, where each starts (and the end), the file row of every
    # outline row joined, where each file's rows start, and whose braces balanced.
    ls, le, is_string = lexemes
    heads, head_ends, bodies, macro_ends = macros
    n_files = len(file_starts)
    longest = 0
    for f in range(n_files):
        longest = max(longest, file_ends[f] - file_starts[f])
    counts = np.zeros((3, longest + 1), np.int32)
    drop, keep, veto = counts[0], counts[1], counts[2]
    mark_words = np.zeros(longest // 8 + 1, np.uint64)
    marks = mark_words.view(np.bool_)
    stack = np.empty(longest + 1, np.int64)
    elides = np.empty(longest + 1, np.bool_)
    function_body = np.empty(longest + 1, np.bool_)
    # Per depth, the statement being read: the boundary before it (`;`, `{`, a function's
    # `}`), whether it opened a brace other than an initialiser's (it may define something),
    # whether it opened an initialiser's, and whether it follows a function's body.
    statement_at = np.empty(longest + 2, np.int64)
    defining = np.empty(longest + 2, np.bool_)
    initialised = np.empty(longest + 2, np.bool_)
    after_body = np.empty(longest + 2, np.bool_)
    text = np.empty(len(a), np.uint8)
    text_at = np.empty(n_files + 1, np.int64)
    rows = np.empty(len(a) + n_files, np.int64)
    rows_at = np.empty(n_files + 1, np.int64)
    ok = np.ones(n_files, np.bool_)
    out, n_rows, k, m = 0, 0, 0, 0
    for f in range(n_files):
        fs, fe = file_starts[f], file_ends[f]
        size = fe - fs
        while k < len(ls) and ls[k] < fs:
            k += 1
        first_lexeme = k
        while k < len(ls) and ls[k] < fe:
            if not is_string[k]:
                _span(drop, marks, ls[k] - fs, le[k] - fs)
            k += 1
        end_lexeme = k
        # A function-like macro keeps its head, the first byte of its body and the
        # backslash-newline of every continued line.
        while m < len(heads) and heads[m] < fe:
            _span(keep, marks, heads[m] - fs, head_ends[m] - fs)
            if bodies[m] < macro_ends[m]:
                _span(keep, marks, bodies[m] - fs, bodies[m] + 1 - fs)
            for at in range(heads[m], macro_ends[m]):
                if a[at] == _NEWLINE:
                    _span(keep, marks, at - 1 - fs, at + 1 - fs)
            m += 1
        # Braces, semicolons and parentheses outside lexemes, in order.
        depth = 0
        last_open = last_shut = shut_before = -1
        statement_at[0], defining[0], initialised[0], after_body[0] = fs - 1, False, False, False
        j = first_lexeme
        at = fs
        elided_from = -1
        while at < fe:
            stop = ls[j] if j < end_lexeme else fe
            while at < stop:
                byte = a[at]
                kind = _KINDS[byte]
                if kind == 0:
                    at += 1
                    continue
                if kind == 1:
                    if byte == _OPEN_PAREN:
                        last_open = at
                    else:
                        shut_before, last_shut = last_shut, at
                    at += 1
                    continue
                if elided_from >= 0 and (byte != _CLOSE or depth != elided_from):
                    # In a body, initialiser or enumerator list that goes whole, only the
                    # braces' balance matters until it closes.
                    if byte == _OPEN:
                        depth += 1
                    elif byte == _CLOSE:
                        depth -= 1
                    at += 1
                    continue
                if byte == _OPEN:
                    before = _before(a, at, fs, lexemes, j - 1, first_lexeme)
                    before_byte = a[before] if before >= 0 else 0
                    # A function's body, an initialiser or an enum's enumerators go.
                    elide = before_byte in (_CLOSE_PAREN, _EQUALS) or _opens_enum(a, before, fs)
                    if before_byte != _EQUALS:
                        defining[depth] = True
                    else:
                        initialised[depth] = True
                    stack[depth] = at
                    elides[depth] = elide
                    function_body[depth] = before_byte == _CLOSE_PAREN
                    depth += 1
                    statement_at[depth], defining[depth] = at, False
                    initialised[depth], after_body[depth] = False, False
                    if elide:
                        elided_from = depth
                    if before_byte == _CLOSE_PAREN:
                        # The parameters of an elided function go too.
                        opened = _parameters_open(
                            a, before, fs, last_open, shut_before, lexemes, j - 1, first_lexeme
                        )
                        if opened >= 0:
                            inner = opened + 1
                            while inner < before and _is_blank(a[inner]):
                                inner += 1
                            # Not `__attribute__((x))`: without its inside it is no
                            # attribute.
                            if inner >= before or a[inner] != _OPEN_PAREN:
                                _span(drop, marks, opened + 1 - fs, before - fs)
                elif byte == _CLOSE:
                    if depth == 0:
                        ok[f] = False
                        at = fe
                        break
                    depth -= 1
                    elided_from = -1
                    if elides[depth]:
                        _span(drop, marks, stack[depth] + 1 - fs, at - fs)
                        _span(veto, marks, stack[depth] + 1 - fs, at - fs)
                    if function_body[depth]:
                        # A function's body ends its definition; a struct's or an
                        # initialiser's statement goes on to its `;`.
                        statement_at[depth], defining[depth] = at, False
                        initialised[depth], after_body[depth] = False, True
                else:
                    # A statement ending in `;` that opened no brace but initialisers'
                    # declares nothing a definition needs (`static struct s x = { };`),
                    # unless it opened another (`struct s { } x;`). One right after a
                    # function's body with no initialiser stays (`EXPORT_SYMBOL(f);`),
                    # and so does a dropped one's `;` at the top level: the parser's
                    # recovery from what it cannot read (macros) resumes at them as it
                    # does in the whole file. Not after a function's body, though: C++
                    # reads `void f() {} ;` as a declaration with an initialiser,
                    # wherever the statements between went.
                    follows_body = False
                    if not defining[depth] and (initialised[depth] or not after_body[depth]):
                        keeps_semicolon = depth == 0 and not after_body[depth]
                        drop_end = at + 1 - keeps_semicolon
                        _span(drop, marks, statement_at[depth] + 1 - fs, drop_end - fs)
                        # Gone whole: the next statement follows the body in its place.
                        follows_body = after_body[depth]
                    statement_at[depth], defining[depth] = at, False
                    initialised[depth], after_body[depth] = False, follows_body
                at += 1
            if j < end_lexeme and at < fe:
                at = max(le[j], at + 1)
                j += 1
        if depth != 0:
            ok[f] = False
        text_at[f] = out
        rows_at[f] = n_rows
        if ok[f]:
            rows[n_rows] = 0
            n_rows += 1
        row = run = 0
        dropping = False
        d = kept = vetoed = 0
        i = 0
        while i <= size:
            # Marks are few: whole words without one are skipped.
            while i < size and not marks[i]:
                i += 1
                if i & 7 == 0:
                    while i + 8 <= size and mark_words[i >> 3] == 0:
                        i += 8
            d += drop[i]
            kept += keep[i]
            vetoed += veto[i]
            drop[i] = keep[i] = veto[i] = 0
            marks[i] = False
            goes = d > 0 and not (kept > 0 and vetoed == 0)
            if (goes == dropping and i < size) or not ok[f]:
                i += 1
                continue
            # The run [run, i) ends: its rows start at each line break it holds, but a run
            # that goes holds one at most.
            held = 0
            for q in range(fs + run, fs + i):
                held += a[q] == _NEWLINE
            if dropping:
                text[out] = _NEWLINE if held else _SPACE
                out += 1
                if held:
                    row += held - 1
                    held = 1
            else:
                for q in range(i - run):
                    text[out + q] = a[fs + run + q]
                out += i - run
            for _ in range(held):
                row += 1
                rows[n_rows] = row
                n_rows += 1
            run = i
            dropping = goes
            i += 1
    text_at[n_files] = out
    rows_at[n_files] = n_rows
    return text[:out], text_at, rows[:n_rows].copy(), rows_at, ok
