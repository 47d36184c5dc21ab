"""The ids a fuzzer should hit most: gap ids, the declared end, specials, partial-UTF-8 tokens,
ids just out of range, negative ids and ids that do not fit in 32 bits."""

from __future__ import annotations

import random

from tokaudit.artifacts.token_bytes import is_partial_utf8
from tokaudit.ids import IdRanges
from tokaudit.model.tokenizer_model import TokenizerModel

#: Ids per category at most (ranges are sampled, never materialised).
PER_CATEGORY = 64


def sample_ranges(ranges: IdRanges, n: int, rng: random.Random) -> list[int]:
    """The first and last id of each range (up to n), topped up with random ids inside the ranges."""
    out: list[int] = []
    for first, last in ranges.ranges:
        out.extend((first, last) if last != first else (first,))
        if len(out) >= n:
            return sorted(set(out[:n]))
    total = ranges.count
    while len(set(out)) < min(n, total):
        k = rng.randrange(total)
        for first, last in ranges.ranges:
            if k <= last - first:
                out.append(first + k)
                break
            k -= last - first + 1
    return sorted(set(out))


def edge_pools(model: TokenizerModel, seed: int) -> dict[str, list[int]]:
    """Category -> ids; empty categories are left out."""
    rng = random.Random(seed)
    size = model.checked_size
    files = model.files
    highest = max((t.mapped.ranges[-1][1] for t in model.profiles.values() if t.mapped), default=-1)
    specials: set[int] = set()
    partial: list[int] = []
    for table in model.profiles.values():
        for layer in table.layers:
            if layer.special:
                specials.update(layer.tokens)
    for layer in files.layers:
        if not layer.special:
            partial.extend(i for i, token in layer.tokens.items() if is_partial_utf8(token))
    pools = {
        "gap": sample_ranges(files.mapped.complement(size), PER_CATEGORY, rng),
        "declared-end": sorted({i for i in (size - 2, size - 1) if i >= 0}),
        "special": sample_ranges(IdRanges.from_ids(specials), PER_CATEGORY, rng) if specials else [],
        "partial-utf8": sorted(rng.sample(partial, min(PER_CATEGORY, len(partial)))),
        "out-of-range": sorted(i for i in {size, size + 1, highest + 1, 2**31 - 1, 2**31, 2**32 - 1} if i >= size),
        "negative": [-1, -2, -(2**31), -(2**63)],
        "huge": [2**32, 2**32 + 1, 2**63 - 1, 2**63, 2**64],
    }
    return {name: ids for name, ids in pools.items() if ids}
