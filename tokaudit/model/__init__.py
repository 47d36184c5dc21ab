"""The TokenizerModel: all artifacts of one target, its declared size(s) and id tables per loader profile."""
