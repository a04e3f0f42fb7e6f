"""Mirrored repositories as workers see them: cache layout, catalog, tree paths, excerpts."""
