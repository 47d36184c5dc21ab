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


def test_the_collector_is_paused_only_while_a_backend_is_fuzzed(kimi):
    import gc

    model, backends = kimi
    seqs, _ = sequences(model, FuzzOptions(iterations=50, seed=2))
    seen: list[bool] = []

    def decode(ids: list[int]) -> str:
        seen.append(gc.isenabled())
        return backends[0].backend.decode(ids)

    class Probe:
        name = "probe"

    probe = Probe()
    probe.decode = decode  # type: ignore[attr-defined]
    assert gc.isenabled()
    run = fuzz_backend(probe, seqs, model.checked_size)  # type: ignore[arg-type]
    assert gc.isenabled() and seen and not any(seen)
    assert len(run.failures) == sum(1 for s in seqs if call(backends[0].backend.decode, s).error_type)
    gc.disable()
    try:
        fuzz_backend(probe, seqs, model.checked_size)  # type: ignore[arg-type]
        assert not gc.isenabled()  # a caller's own pause is kept
    finally:
        gc.enable()
