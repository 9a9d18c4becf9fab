"""The sizes bench/gpu_micro.py measures, in priority order (a section cut by its time budget keeps the first).

The GEMM list covers what the step model needs: square sizes (the peak), sweeps of one dimension with the
other two large (the saturation curve for small M, N or K), and the matrix multiplies of a Llama-style layer
after a tensor-parallel split (hidden 2048-8192, MLP 3.5x hidden, grouped-query attention with a quarter as
many key/value heads, TP 1-8, 512-16384 tokens per micro-batch), forward and the two backward products.
"""

from __future__ import annotations

from typing import Any

POW2_UP_TO_16K = [2**i for i in range(15)]  # 1 ... 16384
SQUARES = [256, 512, 1024, 2048, 4096, 6144, 8192, 12288, 16384]
LAYER_HIDDENS = [2048, 4096, 5120, 8192]
LAYER_TPS = [1, 2, 4, 8]
LAYER_TOKENS = [512, 2048, 4096, 8192, 16384]
MLP_RATIO = 3.5


def _layer_gemms(hidden: int, tp: int, tokens: int) -> list[tuple[str, int, int, int]]:
    """(name, M, N, K) of one layer's forward products on one TP shard, then the data-gradient (dgrad, the
    output gradient times the weight) and weight-gradient (wgrad, K = tokens) products of the same weights."""
    ffn = round(hidden * MLP_RATIO / 128) * 128
    weights = {  # name: (in features K, out features N) per shard; column-parallel splits N, row-parallel K
        "qkv": (hidden, hidden * 3 // 2 // tp),
        "attn_out": (hidden // tp, hidden),
        "mlp_gate_up": (hidden, 2 * ffn // tp),
        "mlp_down": (ffn // tp, hidden),
    }
    shapes = []
    for name, (k_in, n_out) in weights.items():
        tag = f"layer h{hidden} tp{tp} t{tokens} {name}"
        shapes.append((f"{tag} fwd", tokens, n_out, k_in))
        shapes.append((f"{tag} dgrad", tokens, k_in, n_out))
        shapes.append((f"{tag} wgrad", k_in, n_out, tokens))
    return shapes


def gemm_shapes(tiny: bool, dtype: str = "bf16") -> list[tuple[str, int, int, int]]:
    """(family, M, N, K) without duplicates, first occurrence kept. bf16 gets the whole list (forward products
    of every layer shape before any backward one); fp8 the squares, the M sweep and the forward products."""
    if tiny:
        return [
            ("square", 64, 64, 64),
            ("m_sweep n=k=128", 16, 128, 128),
            ("layer h64 tp2 t32 qkv fwd", 32, 48, 64),
        ]
    shapes = [("square", s, s, s) for s in SQUARES]
    shapes += [("m_sweep n=k=8192", m, 8192, 8192) for m in POW2_UP_TO_16K]
    if dtype == "bf16":
        shapes += [("n_sweep m=k=8192", 8192, n, 8192) for n in POW2_UP_TO_16K if n >= 64]
        shapes += [("k_sweep m=n=8192", 8192, 8192, k) for k in POW2_UP_TO_16K if k >= 64]
    layers = []
    for tokens in [4096, 16384, 512, 2048, 8192]:  # the most common micro-batch token counts first
        for hidden in LAYER_HIDDENS:
            for tp in LAYER_TPS:
                layers += _layer_gemms(hidden, tp, tokens)
    shapes += [shape for shape in layers if shape[0].endswith("fwd")]
    if dtype == "bf16":
        shapes += [shape for shape in layers if not shape[0].endswith("fwd")]
    seen: set[tuple[int, int, int]] = set()
    unique = []
    for family, m, n, k in shapes:
        if (m, n, k) not in seen:
            seen.add((m, n, k))
            unique.append((family, m, n, k))
    return unique


def wave_shapes(tiny: bool) -> list[tuple[str, int, int, int]]:
    """A fine sweep in steps of 128 (one output tile's edge) where the count of output tiles crosses multiples
    of the GPU's 132 SMs: M = N from 1024 to 8192 at K = 4096, then N from 128 to 4096 at M = 8192, K = 4096."""
    if tiny:
        return [("wave m=n k=64", 48, 48, 64)]
    shapes = [("wave m=n k=4096", size, size, 4096) for size in range(1024, 8193, 128)]
    return shapes + [("wave n m=8192 k=4096", 8192, n, 4096) for n in range(128, 4097, 128)]


def attention_cases(tiny: bool) -> list[dict[str, Any]]:
    """SDPA configurations: flash and memory-efficient kernels over head dim, sequence, causal mask (16k tokens
    per call), a head-count sweep, and the unfused math path at a few small sizes."""
    if tiny:
        return [dict(backend="math", batch=1, heads=2, seq=32, head_dim=16, causal=True)]
    cases = []
    for head_dim in (128, 64):
        for seq in (512, 1024, 2048, 4096, 8192, 16384):
            for causal in (True, False):
                for backend in ("flash", "efficient"):
                    cases.append(dict(backend=backend, batch=max(1, 16384 // seq), heads=32 if head_dim == 128
                                      else 16, seq=seq, head_dim=head_dim, causal=causal))  # fmt: skip
    for heads in (8, 16, 64):
        for backend in ("flash", "efficient"):
            cases.append(dict(backend=backend, batch=1, heads=heads, seq=4096, head_dim=128, causal=True))
    for seq in (512, 1024, 2048):
        for causal in (True, False):
            cases.append(dict(backend="math", batch=1, heads=16, seq=seq, head_dim=128, causal=causal))
    return cases


def bandwidth_sizes_bytes(tiny: bool) -> list[int]:
    """1 MiB ... 4 GiB by factors of 4 (largest first: the large sizes are the HBM figure the planner reads)."""
    if tiny:
        return [2**20]
    return [2**30 * 4, 2**30, 2**28, 2**26, 2**24, 2**22, 2**20]


def optimizer_sizes(tiny: bool) -> list[tuple[int, str]]:
    """(parameters, dtype of parameters, gradients and moments) for the AdamW step."""
    if tiny:
        return [(2**16, "fp32")]
    return [(1_000_000_000, "fp32"), (300_000_000, "fp32"), (100_000_000, "fp32"), (1_000_000_000, "bf16")]
