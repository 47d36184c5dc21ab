"""``naive``: decode each token alone and concatenate (the classic bug, for contrast)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tokaudit.stream.detokenizers.core import Detokenizer, joined_per_step
from tokaudit.stream.steps import Steps


class Naive(Detokenizer):
    """Decode each token alone and concatenate: the classic bug, for contrast."""

    name = "naive"

    def feed(
        self, steps: Iterable[Sequence[int]], position: int = 0, track_held: bool = True
    ) -> tuple[list[str], list[int]]:
        decode_one = self.ctx.decode_one
        if isinstance(steps, Steps):
            for token_id in set(steps.ids).difference(self.ctx.memo):
                decode_one(token_id)
            texts = list(map(self.ctx.memo.__getitem__, steps.ids))
            chunks = texts if steps.starts is None else joined_per_step(texts, steps.starts)
        else:
            chunks = ["".join(decode_one(i) for i in ids) if len(ids) != 1 else decode_one(ids[0]) for ids in steps]
        return chunks, [0] * len(chunks) if track_held else []
