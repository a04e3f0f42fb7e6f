"""The documentation engine (seed 002): documents generated from a mirrored head, committed
by the mirror on `refs/repo-reader/docs`.

Only the read side is re-exported here, so that workers importing it never load the writer:
the mirror imports `worker.docs.engine` itself.
"""

from worker.docs.freshness import Freshness, freshness, out_of_date
from worker.docs.kinds import KINDS, fingerprints

__all__ = ["KINDS", "Freshness", "fingerprints", "freshness", "out_of_date"]
