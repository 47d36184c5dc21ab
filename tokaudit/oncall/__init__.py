"""The on-call verbs: explain an id, decode/encode with visible token boundaries, fuzz the
backends' decoders with edge-weighted id sequences, diff a draft tokenizer against its target."""
