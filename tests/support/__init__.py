"""Helpers shared by the tests: repository builders, worker processes, mirrored caches."""
