"""Segments and per-commit views on disk, the build that writes them, the LRU that opens them."""
