"""The training sequence length when the user leaves it empty: it follows the data (tokens per example).

One rule for every reader (the estimate, the sweep, the exports, the pages and the CLI go through
`planner.resolve.sequence_length`, which calls `derived_seq_len`), so a plan never shows one length and computes
with another.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Packing fills every sequence with whole examples anyway, so a window longer than needed only costs attention
# and activation memory; 512 tokens keeps short examples several to a sequence (fewer boundaries per token).
PACKED_MIN_TOKENS = 512
# Padded batches: the smallest multiple of 64 tokens, the tile size fused attention kernels work in (FlashAttention
# pads the sequence to its block size internally), so a longer pad would only add padding tokens.
PAD_MULTIPLE_TOKENS = 64
# The Scenario field's own lower bound: shorter sequences are meaningless.
MIN_SEQ_LEN_TOKENS = 16


@dataclass(frozen=True)
class SequenceLength:
    tokens: int
    rule: str  # in words, for the captions and the CLI (`seq_len_rule`)


def derived_seq_len(
    tokens_per_example: float, packing: bool, context_len: int | None = None
) -> SequenceLength:
    """The sequence length that follows the data: packed, the smallest power of two at or above one example
    (at least 512); padded, one example rounded up to a multiple of 64; never above the model's context length."""
    example = max(1, math.ceil(tokens_per_example))
    if packing:
        tokens = max(PACKED_MIN_TOKENS, 2 ** math.ceil(math.log2(example)))
        rule = f"packed: the smallest power of two ≥ {example:,} tokens per example, at least {PACKED_MIN_TOKENS}"
    else:
        tokens = PAD_MULTIPLE_TOKENS * math.ceil(example / PAD_MULTIPLE_TOKENS)
        rule = f"padded: {example:,} tokens per example rounded up to a multiple of {PAD_MULTIPLE_TOKENS}"
    if context_len is not None and context_len >= MIN_SEQ_LEN_TOKENS and tokens > context_len:
        tokens = context_len
        rule += f", capped at the model's context length {context_len:,} (longer examples are split)"
    return SequenceLength(tokens, rule)


def chosen_seq_len(
    seq_len: int | None, tokens_per_example: float, packing: bool, context_len: int | None
) -> SequenceLength:
    """The user's sequence length when given, else the derived one."""
    if seq_len is not None:
        return SequenceLength(seq_len, "set by you")
    return derived_seq_len(tokens_per_example, packing, context_len)
