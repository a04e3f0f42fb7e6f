"""Reading a query as a bug report: version dumps dropped, code mentions found."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from worker.index.views.report import MAX_MENTIONS, read_report

REPORT = """\
`Card.format_value` loses precision for small floats

```python
>>> from astropy.io import fits
>>> card = fits.Card('HIERARCH key', 0.009125)
```

Traceback (most recent call last):
  File "/usr/lib/python3.10/site-packages/astropy/io/fits/card.py", line 1301, in _format_float
    value_str = f"{value:.16G}"
ValueError: bad value

Versions:
numpy: 1.24.2
scipy: 1.10.0
astropy: 5.3.dev
pyerfa: 2.0.0
"""


def test_version_dump_left_out_of_the_scored_text() -> None:
    """Lines pairing packages with versions are not scored; the prose and code are."""
    report = read_report(REPORT)
    assert "numpy" not in report.text
    assert "pyerfa" not in report.text
    assert "loses precision" in report.text
    assert "HIERARCH" in report.text


ENVIRONMENT_REPORT = """\
where() drops attributes
<!-- Please include a self-contained example. Describe the template's guidance here. -->

```python
data = xr.where(cond, left, right)
```

#### Output of ``xr.show_versions()``

<details>

INSTALLED VERSIONS
------------------
commit: None
python: 3.8.2 | packaged by conda-forge | (default, Apr 24 2020)
[GCC 7.3.0]
python-bits: 64
machine: x86_64
LC_ALL: None
libhdf5: 1.10.6

xarray: 0.15.1
pandas: 1.0.4
</details>

```json
{
  "idna": {
    "version": "3.3"
  },
  "urllib3": {
    "version": "1.26.7"
  },
  "cryptography": {
    "version": "3.4.8"
  },
  "using_pyopenssl": false
}
```
"""


def test_environment_dump_and_its_heading_left_out() -> None:
    """Settings, platform lines and the heading naming the tool that printed them are not
    scored, nor is a dump printed as JSON."""
    text = read_report(ENVIRONMENT_REPORT).text
    for word in ("x86_64", "LC_ALL", "GCC", "INSTALLED", "show_versions", "libhdf5", "idna"):
        assert word not in text
    assert "xr.where(cond, left, right)" in text


def test_html_comments_left_out() -> None:
    """An issue template's hidden guidance is not part of the report."""
    report = read_report(ENVIRONMENT_REPORT)
    assert "guidance" not in report.text
    assert "self-contained" not in report.text


def test_title_is_the_first_line_without_exception_names() -> None:
    """The title is the report's first line; the exception it names is left out of it."""
    assert read_report(ENVIRONMENT_REPORT).title == "where() drops attributes"
    raised = read_report("ValueError in Card.format_value\n\nValueError: bad value\n")
    assert raised.title == "in Card.format_value"
    assert read_report("one line only").title == ""


def test_traceback_frames_name_files_and_functions() -> None:
    """A traceback frame gives its file path and its function as mentions."""
    report = read_report(REPORT)
    assert report.paths[0] == "/usr/lib/python3.10/site-packages/astropy/io/fits/card.py"
    assert "_format_float" in report.identifiers


def test_code_names_are_found_in_backticks_calls_and_dotted_paths() -> None:
    """Backticked, called and dotted names are code mentions; prose words are not."""
    report = read_report(REPORT)
    assert {"Card", "format_value"} <= set(report.identifiers)
    assert "astropy.io" in report.modules or "fits.Card" in report.modules
    assert "precision" not in report.identifiers
    assert report.reads_as_report


def test_plain_question_is_not_a_report() -> None:
    """A question without code, traceback or versions reads as a question."""
    report = read_report("where are blueprints registered on the app")
    assert not report.reads_as_report
    assert report.identifiers == ()
    assert report.paths == ()
    assert report.text == "where are blueprints registered on the app"


@given(st.text(max_size=3000))
def test_any_text_reads_within_bounds(text: str) -> None:
    """Any text reads without error and its mentions stay bounded."""
    report = read_report(text)
    assert len(report.identifiers) <= MAX_MENTIONS
    assert len(report.paths) <= MAX_MENTIONS
    assert len(report.modules) <= MAX_MENTIONS
