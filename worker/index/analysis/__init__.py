"""One pass over each blob: language, definitions, chunks and terms, trigrams."""
