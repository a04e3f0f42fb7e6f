"""Which request and response types travel on which subject."""

from __future__ import annotations

from typing import Final

import msgspec

from contracts.errors import ErrorReply
from contracts.research import RepoReaderRequest, RepoReaderResponse
from contracts.subjects import Subject

MESSAGES: Final[dict[Subject, tuple[type[msgspec.Struct], type[msgspec.Struct]]]] = {
    Subject.RESEARCH: (RepoReaderRequest, RepoReaderResponse),
}
"""Request and response type of every subject that is served."""


def json_schemas() -> dict[str, object]:
    """One JSON Schema document describing every message, keyed by subject in `x-subjects`."""
    types: list[type[msgspec.Struct]] = [ErrorReply]
    for request, response in MESSAGES.values():
        types += [request, response]
    (refs, components) = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": components,
        "x-subjects": {
            subject.value: {"request": refs[types.index(req)], "response": refs[types.index(resp)]}
            for subject, (req, resp) in MESSAGES.items()
        },
        "x-error-reply": refs[0],
    }
