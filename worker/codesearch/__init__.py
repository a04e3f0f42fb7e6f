"""Code search: trigram indexes over git blobs, query planning, RE2 verification and ranking."""
