"""The mirror, the cache's only writer: fetch, index, publish; and its admin service."""
