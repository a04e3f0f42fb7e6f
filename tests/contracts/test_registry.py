"""Tests for the registry of which messages travel on which subject."""

from __future__ import annotations

from typing import get_args

from contracts.registry import MESSAGES, MirrorRequest, WorkerRequest
from contracts.subjects import MIRROR_SUBJECTS, WORKER_SUBJECTS, Subject


def test_every_subject_has_its_own_request_type() -> None:
    """No two subjects share a request type, so a handler can dispatch on the type alone."""
    request_types = [MESSAGES[subject][0] for subject in Subject]
    assert len(set(request_types)) == len(request_types)


def test_the_request_unions_are_the_request_types_of_their_subjects() -> None:
    """WorkerRequest holds the request type of every worker subject and MirrorRequest of every
    mirror subject, and nothing else."""
    assert set(get_args(WorkerRequest)) == {MESSAGES[s][0] for s in WORKER_SUBJECTS}
    assert set(get_args(MirrorRequest)) == {MESSAGES[s][0] for s in MIRROR_SUBJECTS}
