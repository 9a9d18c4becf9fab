"""What Hugging Face transformers and PEFT eager code keeps for backward beyond the fused-kernel formulas.

`planner.formulas.memory.activations` follows Korthikanti et al. with fused kernels (Megatron's fused norm and
SiLU·mul, torch.compile in torchtitan and torchtune). The eager modelling code of Hugging Face transformers and
the adapters of PEFT keep more. Measured by counting the distinct storages autograd saves
(torch.autograd.graph.saved_tensors_hooks) in one forward of transformers 5.23.0 `LlamaForCausalLM` (sdpa
attention) with and without PEFT 0.21.2 LoRA, bf16, torch 2.13.0 on CPU (scripts/eager_saved_bytes.py prints
the counts); the code read is transformers' models/llama/modeling_llama.py (commit 5dd4a635) and PEFT's
tuners/lora/layer.py:
- RMSNorm casts its input to fp32 (`hidden_states.to(torch.float32)`) and both the square and the scaling keep
  that fp32 copy: 4 bytes per element where the formulas count the e-byte input, for each of a layer's two norms;
  when the norm's weight trains (full fine-tuning) the product `weight * normed` also keeps the normalised e-byte
  tensor. With a frozen base (LoRA, QLoRA) the frozen linear layers keep no input (they need none for a weight
  gradient), which the formulas' QKV and MLP inputs count: at e = 2 the two cancel exactly (measured), so the
  norm extra is 2·(4 − e)·h − 2·e·h with a frozen base and 2·(4 − e)·h + 2·e·h when training every weight.
- The gated MLP runs act_fn(gate) * up unfused: SiLU keeps its input, the product keeps SiLU's output and up's
  output, and the trainable down projection keeps the product: 4 F-wide tensors against the formulas' 3 (one
  more F·e per token, full fine-tuning). With a frozen down projection the product is not kept: 3, as counted.
- PEFT's LoRA layer casts each adapter's input to the adapter's dtype (`_cast_input_dtype`), and adapters are
  fp32 by default (`autocast_adapter_dtype=True`), so every adapted matrix keeps its own copy of its input
  (d_in elements per token; q, k and v each make one) and A's output: in fp32 when the model runs without
  autocast (a pure 16-bit recipe), in the e-byte autocast dtype under mixed precision, where autocast casts the
  fp32 copy back before A's matmul and the matmul keeps that cast (measured both ways). With adapter dropout the
  dropped copy the formulas count at e bytes is that copy.
- Eager attention (`eager_attention_forward`, what runs when flash attention is off) computes
  `softmax(scores, dtype=torch.float32).to(query.dtype)`: the softmax keeps its fp32 output for its backward
  and the product with V keeps the e-byte cast, 4 bytes per score element beyond the e the formulas count
  (Korthikanti's softmax output); the 0-probability attention dropout of fine-tuning is a no-op that keeps
  nothing. Under selective recompute the scores are rebuilt, so none of it is kept.
- Gemma 2's layer (`gemma_block`; transformers models/gemma2/modeling_gemma2.py) normalises four times:
  before attention and the MLP, as Llama does, and after each (`post_attention_layernorm`,
  `post_feedforward_layernorm`), whose outputs go only into the residual sum. Its norm runs in fp32 throughout
  (`self._norm(x.float()) * (1.0 + self.weight.float())`, cast back at the end): each keeps its fp32 input
  (4 h) and, when its weight trains, its fp32 normalised tensor (4 h, where Llama's keeps an e-byte one).
  Its attention soft-caps the scores (`tanh(scores / cap) * cap`), whose tanh keeps its e-byte output.
- Qwen3 (`qk_norm`; models/qwen3/modeling_qwen3.py) normalises every query and key head (`q_norm`, `k_norm`,
  the same fp32-upcasting RMS norm) before the rotary embedding: each keeps its fp32 input, 4 (a + g)·d per
  token, and, when its weight trains, the e-byte normalised tensor; the rotary product keeps only cos and
  sin, and the attention keeps Q and K as the formulas count them.
The norm, MLP and attention terms apply to models with gated MLPs (`n_mlp_matrices` 3: Llama, Mistral, Qwen, Gemma and T5
v1.1 families), which all use an RMS norm that upcasts; GeLU models (GPT-2, BLOOM, OPT) use LayerNorm, which
keeps its e-byte input, and an ungated MLP, as the formulas count; their attention classes predate
transformers' shared `eager_attention_forward` and were not measured, so their scores stay as counted (on the
DeepSpeed-Chat OPT rows of data/calibration.csv, Hugging Face eager code, the term would take DSC-11 from +18 %
to +36 % while DSC-08 and DSC-10 sit at -24 % and -10 %: no consistent support for it there).
"""

from __future__ import annotations

import numpy as np

from planner.formulas.memory.activations import FloatOrArray
from planner.formulas.memory.memory_inputs import MemoryInputs
from planner.formulas.memory.recipes import Method, Recompute
from planner.formulas.scalars import select

FP32_BYTES = 4.0
NORMS_PER_LAYER = 2.0  # before attention and before the MLP
EXTRA_GEMMA_NORMS = 2.0  # Gemma 2 also normalises after attention and after the MLP


def eager_layer_bytes(p: MemoryInputs) -> FloatOrArray:
    """Bytes one layer keeps for one micro-batch beyond `layer_activation_bytes` + `lora_adapter_bytes` when
    the model runs as Hugging Face eager code (`hf_eager_code`); 0 otherwise (module docstring)."""
    eager = np.asarray(p.hf_eager_code) > 0
    if np.ndim(eager) == 0 and not eager:  # the usual case: skip the per-row work
        return 0.0
    tokens = p.seq_len * p.micro_batch / p.cp
    e, h = p.activation_bytes, p.hidden
    full = np.asarray(p.method) == Method.FULL
    gated = np.asarray(p.n_mlp_matrices) >= 3
    norm_weight = select(full, 1.0, -1.0) * NORMS_PER_LAYER * e * h
    norms = (NORMS_PER_LAYER * (FP32_BYTES - e) * h + norm_weight) / select(p.sequence_parallel, p.tp, 1.0)
    silu_output = select(full, e * p.ffn_hidden / p.tp, 0.0)
    gated_extras = norms + silu_output + _attention_bytes_per_token(p) + _extra_norms_per_token(p)
    base = select(gated, gated_extras, 0.0)
    return select(eager, tokens * (base + select(full, 0.0, _peft_bytes_per_token(p))), 0.0)


def _attention_bytes_per_token(p: MemoryInputs) -> FloatOrArray:
    """Eager attention's fp32 softmax output and Gemma 2's tanh output, per query token (module docstring);
    0 with flash attention (no scores are stored) and under selective recompute (they are rebuilt)."""
    per_score = FP32_BYTES + p.gemma_block * p.activation_bytes
    kept = select(
        np.asarray(p.recompute) == Recompute.SELECTIVE, 0.0, p.n_heads * p.seq_len * per_score / p.tp
    )
    return select(p.flash_attention, 0.0, kept)


def _extra_norms_per_token(p: MemoryInputs) -> FloatOrArray:
    """Gemma 2's two extra norms (fp32 input, and fp32 normalised tensor when trained), the fp32 (not e-byte)
    normalised tensors of its two pre-norms when trained, and Qwen3's query/key norms (fp32 input, and the
    e-byte normalised tensor when trained), per token (module docstring)."""
    trained = select(np.asarray(p.method) == Method.FULL, 1.0, 0.0)
    e = p.activation_bytes
    extra_norms = EXTRA_GEMMA_NORMS * (FP32_BYTES + trained * FP32_BYTES) * p.hidden
    pre_norms = trained * NORMS_PER_LAYER * (FP32_BYTES - e) * p.hidden
    gemma = p.gemma_block * (extra_norms + pre_norms) / select(p.sequence_parallel, p.tp, 1.0)
    heads = (p.n_heads + np.maximum(p.n_kv_heads, p.tp)) * p.head_dim / p.tp
    return gemma + p.qk_norm * heads * (FP32_BYTES + trained * e)


def _peft_bytes_per_token(p: MemoryInputs) -> FloatOrArray:
    """PEFT's fp32 input copy and fp32 A output of every adapted matrix of a layer, beyond what
    `lora_adapter_bytes` counts (its e-byte A outputs and, with dropout, e-byte dropped copies)."""
    e = p.activation_bytes
    copy = select(
        np.asarray(p.master_bytes) > 0, e, FP32_BYTES
    )  # autocast (mixed precision) or fp32 adapters
    column_inputs = (3.0 + p.lora_all_linear * (p.n_mlp_matrices - 1.0)) * p.hidden
    column_inputs = column_inputs / select(p.sequence_parallel, p.tp, 1.0)
    row_inputs = (p.n_heads * p.head_dim + p.lora_all_linear * p.ffn_hidden) / p.tp
    n_matrices = 4.0 + p.lora_all_linear * p.n_mlp_matrices
    copies = (column_inputs + row_inputs) * (copy - p.lora_dropout * e)
    return copies + n_matrices * p.lora_rank * (copy - e)


def peft_widest_point_bytes(p: MemoryInputs) -> FloatOrArray:
    """Bytes a PEFT layer holds, beyond its saved tensors, at the widest point of its forward: a layer rebuilt
    by recompute holds them on top of its working set while the incoming gradient waits, the last layer on top
    of every layer's saved tensors before the logits exist (`peak.layer_activations`).

    `lora.Linear.forward` computes `result + lora_B(lora_A(x)) * scaling` in the adapter's compute dtype c
    (fp32 without autocast, e under it): B's output and its scaled copy (c each) and the e-byte base output and
    sum exist together, max(2c + e, c + 2e) per output element of the widest adapted matrix (up/gate: F with
    all-linear targets, q: a·d otherwise). On the input side, under autocast, the fp32 copy of the widest
    input (down's F-wide, o's a·d-wide) lives until A's product returns, beside that e-byte input, which a
    frozen base layer does not keep. 0 for full training and fused code.
    """
    adapted = (np.asarray(p.hf_eager_code) > 0) & (np.asarray(p.method) != Method.FULL)
    if np.ndim(adapted) == 0 and not adapted:
        return 0.0
    e = p.activation_bytes
    autocast = np.asarray(p.master_bytes) > 0
    c = select(autocast, e, FP32_BYTES)
    width = select(np.asarray(p.lora_all_linear) > 0, p.ffn_hidden, p.n_heads * p.head_dim) / p.tp
    output_side = width * np.maximum(2.0 * c + e, c + 2.0 * e)
    input_side = width * (select(autocast, FP32_BYTES, 0.0) + e)
    tokens = p.seq_len * p.micro_batch / p.cp
    return select(adapted, tokens * np.maximum(output_side, input_side), 0.0)
