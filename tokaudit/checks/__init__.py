"""Scan rules: each is a small function ``TokenizerModel -> findings``, registered with its code."""
