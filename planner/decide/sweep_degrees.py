"""The parallel degrees a plan search tries for one model: tensor, context, pipeline (with virtual stages) and
expert parallelism, each kept to what the frameworks can run for that model's shape and sequence, and where a
hybrid shard (HSDP) is a choice of its own.

Split from `planner.decide.sweep_grid` (which crosses them into layouts) so the rules for each degree sit
together with their reasons.
"""

from __future__ import annotations

import numpy as np

from planner.model.layer_split import interleaving_fits

# Context-parallel degrees tried: powers of two up to 16, Llama 3 405B's long-context layout (CP 16 at 128k
# tokens; Dubey et al. 2024, "The Llama 3 Herd of Models", Table 4).
DEFAULT_CP_DEGREES = (1, 2, 4, 8, 16)
# A CP degree is tried only where every rank keeps at least this many tokens of each sequence. Ring attention
# hides each KV pass behind the attention over the block already held only when the block is long enough:
# Liu et al. 2023 ("Ring Attention", §3) need a block of at least FLOPs/bandwidth tokens, about 1k over NVLink
# and several times that over the network. 4096 (a margin over the NVLink bound) also keeps the grid of every
# sequence of 4k tokens or less, where activations are small beside the weights, as it was; what a shorter
# block costs is in the model (`planner.formulas.step.comm.context_parallel_comm_s`), this only prunes the grid.
MIN_TOKENS_PER_CP_RANK = 4096


def tensor_parallel_degrees(gpus_per_node: int, n_heads: float | None) -> tuple[int, ...]:
    """Divisors of the node size, so a TP group never crosses a node, that also divide the attention heads
    (Megatron-LM asserts num_attention_heads % tensor_model_parallel_size == 0)."""
    divisors = [d for d in range(1, gpus_per_node + 1) if gpus_per_node % d == 0]
    if n_heads:
        divisors = [d for d in divisors if int(n_heads) % d == 0]
    return tuple(divisors) or (1,)


def context_parallel_degrees(degrees: tuple[int, ...], seq_len_tokens: float | None) -> tuple[int, ...]:
    """The context-parallel degrees among `degrees` a sequence of `seq_len_tokens` allows: 1 always, and cp > 1
    where the sequence splits into 2·cp equal chunks (Megatron-Core's load-balanced causal split gives each
    rank two chunks, one early and one late; Transformer Engine asserts seq_len % (2·cp) == 0) that leave at
    least `MIN_TOKENS_PER_CP_RANK` tokens per rank. Ring attention (Megatron's "p2p" CP) splits the sequence,
    not the heads, so the head count sets no rule here (it would for an all-to-all, Ulysses-style split).
    Without a known length only cp 1 is tried; a fixed degree that the rules refuse leaves no layouts, so the
    search says which fixed choice is in the way."""
    if seq_len_tokens is None:
        return tuple(cp for cp in degrees if cp == 1)
    seq = int(seq_len_tokens)
    return tuple(
        cp for cp in degrees if cp == 1 or (seq % (2 * cp) == 0 and seq // cp >= MIN_TOKENS_PER_CP_RANK)
    )


def pipeline_schedules(
    pps: tuple[int, ...], virtual_stages: tuple[int, ...], n_layers: float | None
) -> list[tuple[int, int]]:
    """(PP, virtual stages) pairs: v = 1 for every depth when the space holds it; v > 1 where pp > 1 and the
    layers split into pp·v chunks (`interleaving_fits`; without a shape the layer count is unknown, so plain
    1F1B only). A space without v = 1 (the user fixed the virtual stages) gets no plain 1F1B rows."""
    pairs = [(pp, 1) for pp in pps] if 1 in virtual_stages else []
    if n_layers is not None:
        more = sorted(set(virtual_stages) - {1})
        pairs += [(pp, v) for pp in pps for v in more if bool(interleaving_fits(n_layers, pp, v))]
    return pairs


def expert_degrees(degrees: tuple[int, ...], n_experts: float | None) -> tuple[int, ...]:
    """The expert-parallel degrees a model allows among `degrees`: divisors of its routed experts, and for a
    dense model 1 alone. None left (a fixed degree the model cannot take): no layouts, so the search says
    which fixed choice is in the way instead of quietly running another degree."""
    allowed = [1] if not n_experts else [ep for ep in degrees if int(n_experts) % ep == 0]
    return tuple(ep for ep in allowed if ep in degrees)


def with_hybrid_shard(
    columns: dict[str, np.ndarray], choices: tuple[bool, ...], gpus_per_node: int
) -> dict[str, np.ndarray]:
    """The layouts with a `hybrid_shard` column (1.0: HSDP, 0.0: the ZeRO group spans all of dp).

    With both choices allowed, a layout gets a hybrid twin only where the choice changes something: ZeRO
    stage 1-3 sharding a data-parallel group that crosses nodes (tp·cp·dp > GPUs per node), with at least two
    replicas' ranks inside one node to shard over (PyTorch FSDP HYBRID_SHARD / DeepSpeed ZeRO++ hpZ shard
    within the node and replicate across nodes). One choice alone (the user fixed it) is that value everywhere.
    """
    n_rows = len(columns["n_gpus"])
    if len(choices) == 1:
        return {**columns, "hybrid_shard": np.full(n_rows, float(choices[0]))}
    model_split = columns["tp"] * columns["cp"]
    twins = (
        (columns["zero_stage"] >= 1)
        & (model_split * columns["dp"] > gpus_per_node)
        & (np.floor(gpus_per_node / model_split) >= 2)
    )
    flags = np.concatenate([np.zeros(n_rows), np.ones(int(np.count_nonzero(twins)))])
    doubled = {name: np.concatenate([values, values[twins]]) for name, values in columns.items()}
    return {**doubled, "hybrid_shard": flags}
