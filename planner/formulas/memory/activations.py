"""Activation memory of a transformer stack and of its output layer, per GPU, in bytes.

Source: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", §4 and
Table 2. Per layer, 16-bit, no parallelism, with dropout: s·b·h·(34 + 5·a·s/h) bytes, made of
- attention block 11·s·b·h + 5·a·s²·b: QKV input 2, Q and K 4, V 2, output-projection input 2 (×s·b·h), the
  1-byte dropout mask after the projection 1; softmax output 2·a·s²·b, its dropout mask a·s²·b and the
  dropout output 2·a·s²·b;
- MLP 19·s·b·h: input 2, GeLU input 8, down-projection input 8, 1-byte dropout mask 1;
- two LayerNorm inputs 4·s·b·h.

Generalised here (per token, e = bytes per activation element):
- K and V sized by the key/value heads (GQA/MQA: g·d instead of h); Q and the attention output by a·d;
- the MLP stores one F-wide tensor per matrix: GeLU 2 (activation input, down input), SwiGLU 3 (gate and
  up outputs, the inputs of the gated product, and the product, the down input); a fused SiLU·mul
  recomputes SiLU, as Megatron's fused kernel and torch.compile do;
- dropout masks only when dropout is on; modern fine-tuning runs with dropout 0, so the default is off;
- flash attention never stores the s×s scores: it keeps the fp32 softmax statistics (log-sum-exp, 4 bytes
  per head per query), so the 5·a·s/h term vanishes (Dao et al. 2022, FlashAttention §3.1);
- tensor parallelism divides the attention and MLP interiors by t; the norm inputs, the two linear inputs
  and the dropout masks are replicated unless sequence parallelism splits them too (Korthikanti Table 2:
  10 + 24/t without SP, 34/t with SP); GQA key/value heads are replicated when g < t;
- context parallelism splits the sequence, so every term is divided by cp (the score term keeps all keys).

Recompute modes (`planner.formulas.memory.recipes.Recompute`):
- 0 none; 1 selective: Korthikanti §5, the attention core is recomputed, dropping the score term (with
  flash attention there is none to drop, so it equals none);
- 2 full: each layer keeps its input (2·s·b·h per layer, ÷t with SP) and one layer's full working set exists
  while that layer is rebuilt in backward;
- 3 op-level selective (torchtitan `selective_ac_option="op"`, PyTorch selective activation checkpointing):
  keep the layer input, the attention output with its statistics and every second matmul output; recompute
  the rest (norms, activation functions, the other matmuls) layer by layer, which also needs one working set.
Every function accepts floats or numpy arrays and broadcasts.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from planner.formulas.memory.recipes import Recompute
from planner.formulas.scalars import select

FloatOrArray = float | npt.NDArray[np.float64]


SOFTMAX_STAT_BYTES = 4.0  # fp32 log-sum-exp per head per query row (FlashAttention's saved statistics)
DROPOUT_MASK_BYTES = 1.0  # PyTorch stores dropout masks as bool/uint8 (Korthikanti §4.1)
# Cross-entropy in fp32 peaks inside the log-softmax backward, which holds three fp32 [tokens, V] tensors:
# the saved log-softmax output, the dense gradient coming from the NLL loss and the gradient it produces.
LOSS_FP32_BUFFERS = 3.0
FP32_BYTES = 4.0
# Chunked cross-entropy: torchtune's CEWithChunkedOutputLoss default `num_output_chunks = 8`.
CE_CHUNKS = 8.0
# Op-level selective checkpointing keeps every second matmul output (torchtitan's policy: "save the output of
# all compute ops, except every second mm"), so half of the matmul outputs on average.
OP_SAVED_MATMUL_FRAC = 0.5


def layer_replicated_bytes_per_token(hidden, element_bytes, dropout=0.0):
    """Norm inputs (2), QKV input and MLP input (1 each) in e bytes, + two 1-byte dropout masks.

    These are Korthikanti's "10·s·b·h" (with dropout), the part tensor parallelism does not split.
    """
    return hidden * (4.0 * element_bytes + 2.0 * DROPOUT_MASK_BYTES * dropout)


def layer_split_bytes_per_token(n_heads, n_kv_heads, head_dim, ffn_hidden, n_mlp_matrices, element_bytes, tp):
    """Q, K, V, attention output and F-wide MLP tensors on one tensor-parallel rank (Korthikanti's "24/t").

    Query heads split over t; key/value heads split too but each rank keeps at least one (GQA with g < t).
    """
    q_and_out = 2.0 * n_heads * head_dim / tp
    k_and_v = 2.0 * np.maximum(n_kv_heads, tp) * head_dim / tp
    mlp = n_mlp_matrices * ffn_hidden / tp
    return element_bytes * (q_and_out + k_and_v + mlp)


def attention_score_bytes_per_token(seq_len, n_heads, element_bytes, tp, flash_attention, dropout=0.0):
    """Softmax output (+ dropout mask and output) per query: a·s·(e [+ 1 + e])/t (Korthikanti's 5·a·s/h).

    With flash attention only the fp32 log-sum-exp per head remains: 4·a/t.
    """
    eager = n_heads * seq_len * (element_bytes + dropout * (DROPOUT_MASK_BYTES + element_bytes))
    flash = n_heads * SOFTMAX_STAT_BYTES
    return select(flash_attention, flash, eager) / tp


def layer_activation_bytes(
    seq_len,
    micro_batch,
    hidden,
    n_heads,
    n_kv_heads,
    head_dim,
    ffn_hidden,
    n_mlp_matrices,
    element_bytes,
    tp=1.0,
    cp=1.0,
    sequence_parallel=0.0,
    flash_attention=1.0,
    recompute=Recompute.NONE,
    dropout=0.0,
):
    """Bytes one layer keeps for backward for one micro-batch (Korthikanti Table 2); tokens per GPU s·b/cp.

    `recompute` = 1 (selective) drops the attention-score term; any other code gives the full working set
    (what a layer holds while it is rebuilt under full or op-level recompute).
    """
    tokens = seq_len * micro_batch / cp
    replicated = layer_replicated_bytes_per_token(hidden, element_bytes, dropout)
    replicated = replicated / select(sequence_parallel, tp, 1.0)
    split = layer_split_bytes_per_token(
        n_heads, n_kv_heads, head_dim, ffn_hidden, n_mlp_matrices, element_bytes, tp
    )
    score = attention_score_bytes_per_token(seq_len, n_heads, element_bytes, tp, flash_attention, dropout)
    score = select(np.asarray(recompute) == Recompute.SELECTIVE, 0.0, score)
    return tokens * (replicated + split + score)


def layer_input_bytes(seq_len, micro_batch, hidden, element_bytes, tp=1.0, cp=1.0, sequence_parallel=0.0):
    """What full recompute keeps per layer: its input, s·b·h·e/cp, ÷t with SP (Korthikanti §5: 2·s·b·h)."""
    return seq_len * micro_batch / cp * hidden * element_bytes / select(sequence_parallel, tp, 1.0)


def op_selective_layer_bytes(
    seq_len,
    micro_batch,
    hidden,
    n_heads,
    n_kv_heads,
    head_dim,
    ffn_hidden,
    n_mlp_matrices,
    element_bytes,
    tp=1.0,
    cp=1.0,
    sequence_parallel=0.0,
    flash_attention=1.0,
):
    """What op-level selective checkpointing keeps per layer (torchtitan's op SAC policy, module docstring).

    Layer input + attention output (a·d/t) and its statistics + half of the matmul outputs: q (a·d), k and v
    (g·d each), the MLP's input-side matrices ((n − 1)·F) split over t; the output and down projections
    (h each) and the layer input split only with sequence parallelism.
    """
    tokens = seq_len * micro_batch / cp
    row_parallel = hidden * (1.0 + 2.0 * OP_SAVED_MATMUL_FRAC) / select(sequence_parallel, tp, 1.0)
    kv_heads = np.maximum(n_kv_heads, tp)
    column_parallel = (n_heads + kv_heads + kv_heads) * head_dim + (n_mlp_matrices - 1.0) * ffn_hidden
    split = (n_heads * head_dim + OP_SAVED_MATMUL_FRAC * column_parallel) / tp
    stats = select(flash_attention, n_heads * SOFTMAX_STAT_BYTES / tp, 0.0)
    return tokens * (element_bytes * (row_parallel + split) + stats)


def stack_activation_bytes(n_layers_held, kept_per_layer, working_bytes, offload=0.0):
    """Activations a GPU holds for `n_layers_held` layer passes (layers per stage × micro-batches in flight).

    Every layer keeps `kept_per_layer`; under full or op-level recompute one layer's working set comes on
    top while it is rebuilt (Korthikanti §5). With activation offload the kept tensors wait in host memory
    and the GPU holds two layers' worth (the one computing and the one in transfer).
    Returns (gpu_bytes, host_bytes).
    """
    kept = n_layers_held * kept_per_layer
    on_gpu = select(offload, np.minimum(kept, 2.0 * kept_per_layer), kept)
    return on_gpu + working_bytes, kept - on_gpu


def loss_bytes_per_logit(element_bytes, fused_cross_entropy=0.0):
    """Bytes per [token, vocab] entry of the output layer and the loss (peers.md §3.1 and §5.6).

    Standard: the 16-bit logits (e) plus three fp32 buffers at the peak of the loss backward: the saved
    log-softmax, the gradient from the NLL loss and the gradient of the logits (e + 12: 14 bytes in bf16).
    Fused/chunked (torchtune's CEWithChunkedOutputLoss with its per-chunk upcast compiled, as its docstring
    recommends; Liger's fused kernel needs less still): the 16-bit logits stay and the loss never
    materialises an fp32 copy, only one 16-bit chunk of gradient at a time: e·(1 + 1/8).
    """
    standard = element_bytes + LOSS_FP32_BUFFERS * FP32_BYTES
    fused = element_bytes * (1.0 + 1.0 / CE_CHUNKS)
    return select(fused_cross_entropy, fused, standard)


def logits_bytes(seq_len, micro_batch, vocab, hidden, element_bytes, tp=1.0, cp=1.0, fused_cross_entropy=0.0):
    """Output layer and loss buffers per micro-batch: final-norm and head inputs (2·h·e per token) plus the
    vocabulary-parallel logits (V/t per token) at `loss_bytes_per_logit`."""
    tokens = seq_len * micro_batch / cp
    per_logit = loss_bytes_per_logit(element_bytes, fused_cross_entropy)
    return tokens * (2.0 * hidden * element_bytes + vocab / tp * per_logit)


def lora_adapter_bytes(
    seq_len,
    micro_batch,
    hidden,
    n_heads,
    head_dim,
    ffn_hidden,
    n_mlp_matrices,
    element_bytes,
    rank,
    all_linear,
    lora_dropout=0.0,
    tp=1.0,
    cp=1.0,
    sequence_parallel=0.0,
):
    """What the LoRA adapters of one layer save for backward for one micro-batch, beyond the base layer.

    An adapter computes scaling·B(A(dropout(x))) beside the frozen W·x (Hu et al. 2021 §4.1; torchtune's
    LoRALinear and PEFT's lora.Linear both do exactly this). Backward needs
    - A's output (r per token, e bytes) for B's weight gradient, per adapted matrix;
    - A's input for A's weight gradient: with dropout 0 that is x itself, which the base layer already keeps
      (counted in `layer_activation_bytes`); with dropout on, each adapter draws its own mask, so it keeps
      its own dropped copy of x (d_in·e) and the 1-byte mask (d_in) — PEFT keeps one nn.Dropout per
      adapted module, torchtune one per LoRALinear.
    Adapted matrices per layer: q, k, v, o (inputs h, h, h and a·d); all-linear adds the MLP's n − 1
    input-side matrices (input h) and its down projection (input F, the active width for MoE, counted as
    one MLP of that width). Column-parallel inputs (h) split over t only with sequence parallelism,
    row-parallel ones (a·d, F) always; A's outputs are replicated (r is not split).
    """
    tokens = seq_len * micro_batch / cp
    column_inputs = (3.0 + all_linear * (n_mlp_matrices - 1.0)) * hidden / select(sequence_parallel, tp, 1.0)
    row_inputs = (n_heads * head_dim + all_linear * ffn_hidden) / tp
    n_matrices = 4.0 + all_linear * n_mlp_matrices
    a_outputs = n_matrices * rank * element_bytes
    dropped = lora_dropout * (column_inputs + row_inputs) * (element_bytes + DROPOUT_MASK_BYTES)
    return tokens * (a_outputs + dropped)
