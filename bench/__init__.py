"""Benchmarks for repo-reader: reproducible corpora, search quality and speed."""
