"""The documentation engine (seed 002): documents generated from a mirrored head, committed
by the mirror on `refs/repo-reader/docs`."""

from worker.docs.engine import DocsEngine, Freshness, Regeneration, freshness
from worker.docs.kinds import KINDS, fingerprints

__all__ = ["KINDS", "DocsEngine", "Freshness", "Regeneration", "fingerprints", "freshness"]
