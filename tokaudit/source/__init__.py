"""Where a target's files come from: a local directory, a single file, or a Hugging Face repo id."""
