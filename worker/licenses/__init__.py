"""License detection for excerpts and license constraints for requests."""

from worker.licenses.header import spdx_header
from worker.licenses.identify import IDENTIFY_THRESHOLD, identify_license_text
from worker.licenses.policy import LicensePolicy
from worker.licenses.resolver import LicenseCache, LicenseInfo, LicenseResolver

__all__ = [
    "IDENTIFY_THRESHOLD",
    "LicenseCache",
    "LicenseInfo",
    "LicensePolicy",
    "LicenseResolver",
    "identify_license_text",
    "spdx_header",
]
