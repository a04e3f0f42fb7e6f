"""A small repository with what every document reads: a package importing itself, a private
module, tests, an SPDX header that differs from the root license, and some history."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cache import MirroredCache, SourceFactory
from tests.support.gitrepos import MIT_LICENSE, Content

REPO = "acme/shop"

SHOP_FILES: dict[str, Content] = {
    "LICENSE": MIT_LICENSE,
    "README.md": "# Shop\n\nOrders and prices.\n",
    "shop/__init__.py": '"""The shop."""\n\nfrom shop.orders import Order\n',
    "shop/orders.py": (
        '"""Orders."""\n\n'
        "from shop.prices import sum_prices\n\n\n"
        "class Order:\n"
        '    """A customer order."""\n\n'
        "    def __init__(self, items):\n"
        "        self.items = items\n\n"
        "    def total(self, discount: float = 0.0) -> float:\n"
        '        """The order total after a discount."""\n'
        "        return sum_prices(self.items) * (1 - discount)\n"
    ),
    "shop/prices.py": (
        "# SPDX-License-Identifier: Apache-2.0\n"
        '"""Prices."""\n\n\n'
        "def sum_prices(items):\n"
        '    """Add the prices of items."""\n'
        "    return sum(item.price for item in items)\n\n\n"
        "def _round(value):\n"
        "    return round(value, 2)\n"
    ),
    "shop/_internal.py": "def helper():\n    return 1\n",
    "tests/test_orders.py": (
        "from shop.orders import Order\n\n\ndef test_total():\n    assert Order([]).total() == 0\n"
    ),
}


@pytest.fixture
def shop(make_source: SourceFactory, cache: MirroredCache) -> tuple[Path, MirroredCache]:
    """The shop, registered and synced; its source path and the cache."""
    source, _ = make_source("shop", SHOP_FILES)
    cache.add(REPO, source)
    return source, cache
