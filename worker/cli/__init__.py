"""The `repo-reader` command line."""
