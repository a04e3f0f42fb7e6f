"""Read the license a package's metadata declares: pyproject.toml, setup.cfg, package.json,
Cargo.toml.

Only a valid SPDX expression counts (`Apache 2.0` or `BSD` is a name, not an expression,
and is ignored); deprecated ids are normalised (`GPL-2.0+` -> `GPL-2.0-or-later`) and
Cargo's old `MIT/Apache-2.0` is read as `MIT OR Apache-2.0`. A file that does not parse
declares nothing.
"""

from __future__ import annotations

import configparser
import json
import tomllib
from typing import Any, Final

from worker.licenses.expressions import normalise_expression

METADATA_FILE_NAMES: Final = ("pyproject.toml", "setup.cfg", "Cargo.toml", "package.json")
"""The package metadata files read, in the order they are asked."""
MAX_METADATA_BYTES = 256 * 1024


def metadata_license(name: str, data: bytes) -> str | None:
    """The SPDX expression the metadata file `name` (one of `METADATA_FILE_NAMES`) declares."""
    if len(data) > MAX_METADATA_BYTES:
        return None
    try:
        text = data.decode("utf-8")
        match name:
            case "pyproject.toml":
                values = _pyproject(tomllib.loads(text))
            case "Cargo.toml":
                document = tomllib.loads(text)
                values = [
                    _get(document, "package", "license"),
                    _get(document, "workspace", "package", "license"),
                ]
            case "package.json":
                values = [_get(json.loads(text), "license")]
            case "setup.cfg":
                values = _setup_cfg(text)
            case _:
                return None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, json.JSONDecodeError, configparser.Error):
        return None
    for value in values:
        if isinstance(value, str) and (spdx := normalise_expression(value)) is not None:
            return spdx
    return None


def _pyproject(document: dict[str, Any]) -> list[Any]:
    license_ = _get(document, "project", "license")
    # PEP 639: a string is an SPDX expression; the older {text = "..."} is free text.
    text = license_.get("text") if isinstance(license_, dict) else license_
    return [text, _get(document, "tool", "poetry", "license")]


def _setup_cfg(text: str) -> list[Any]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    if not parser.has_section("metadata"):
        return []
    return [parser.get("metadata", key, fallback=None) for key in ("license_expression", "license")]


def _get(document: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document
