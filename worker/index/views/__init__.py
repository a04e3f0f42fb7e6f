"""What queries read from a commit's index: BM25F text ranking, trigram candidates."""
