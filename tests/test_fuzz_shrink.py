"""fuzz's fast shrinking (class from the decode loop, a single failing id from the one-id memo) gives
exactly the failures the straightforward path gives: decode the sequence again to classify it, then
shrink it to a 1-minimal reproducer."""

from __future__ import annotations

from tokaudit.backends.base import call
from tokaudit.oncall.fuzz import FuzzOptions, fuzz_backend, sequences
from tokaudit.oncall.shrink import Shrinker, failure_class


def test_fast_shrinking_equals_the_straightforward_one(kimi):
    model, backends = kimi
    seqs, _ = sequences(model, FuzzOptions(iterations=3000, seed=11))
    for lb in backends:  # tiktoken (KeyError) and strict (UnknownId)
        run = fuzz_backend(lb.backend, seqs, model.checked_size)
        slow = Shrinker(lb.backend.decode)
        expected = []
        for seq in seqs:
            outcome = call(lb.backend.decode, seq)
            if outcome.ok:
                continue
            cls = failure_class(outcome)
            reproducer, small = slow.shrink(seq, cls)
            expected.append((cls, seq, reproducer, (small if not small.ok else outcome).describe()))
        got = [(f.cls, f.sequence, f.reproducer, f.outcome.describe()) for f in run.failures]
        assert got == expected
        assert len(got) > 500 and all(len(f.reproducer) == 1 for f in run.failures)
