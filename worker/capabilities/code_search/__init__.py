"""The `code.search` capability: compiled queries, index-preselected files, ranked hits."""
