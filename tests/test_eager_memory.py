"""Hugging Face / PEFT eager code's saved tensors (planner/formulas/memory/eager.py) against the measured counts.

Golden figures: scripts/eager_saved_bytes.py on transformers 5.23.0, PEFT 0.21.2 and torch 2.13.0 (CPU, bf16, sdpa):
bytes per token that one Llama-shaped decoder layer (hidden 512, 8 query and 2 key/value heads of 64, MLP 1,792,
sequence 512) keeps for backward, every distinct storage once, parameters left out. Each count includes the
rotary cos/sin pair, 2 × 64 × 2 B = 256 B per token, which a deep model computes once for all its layers.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.catalogue.catalog import default_catalogs
from planner.estimate import estimate
from planner.formulas.memory.activations import layer_activation_bytes, lora_adapter_bytes
from planner.formulas.memory.eager import eager_layer_bytes
from planner.formulas.memory.memory_inputs import MemoryInputs
from planner.formulas.memory.recipes import Method
from planner.inputs.scenario import Scenario

ROTARY = 256.0  # cos and sin, shared by every layer
MEASURED = {
    "full": 25384.0,
    "frozen_base": 17704.0,
    "lora_q_v": 21864.0,
    "lora_all_linear": 37384.0,
    "lora_all_linear_autocast": 27864.0,  # under torch.autocast bf16: 16-bit copies (+ the adapters' weight casts)
}
SHAPE = dict(hidden=512, n_heads=8, n_kv_heads=2, head_dim=64, ffn_hidden=1792, n_mlp_matrices=3, vocab=256)
SEQ = 512


def inputs(method: Method, all_linear: float = 0.0, master_bytes: float = 0.0) -> MemoryInputs:
    """The measured layer; master_bytes 0: a pure bf16 recipe, no autocast (the measurement without autocast)."""
    return MemoryInputs(
        n_params=1e7, n_embedding_params=0.0, n_head_params=0.0, n_layers=1, seq_len=SEQ, method=float(method),
        lora_rank=8.0, lora_all_linear=all_linear, hf_eager_code=1.0, master_bytes=master_bytes, **SHAPE,
    )  # fmt: skip


def fused_layer_per_token() -> float:
    """Korthikanti's layer with flash attention at this shape: 17,440 B per token."""
    s = SHAPE
    return (
        layer_activation_bytes(
            SEQ, 1.0, s["hidden"], s["n_heads"], s["n_kv_heads"], s["head_dim"], s["ffn_hidden"], 3.0, 2.0
        )
        / SEQ
    )


def test_full_fine_tuning_layer_matches_the_measured_storages():
    # fused formula 17,440 + fp32 norm inputs and normalised copies 8·512 + the SiLU output 2·1,792 = 25,120;
    # measured 25,384 − 256 rotary = 25,128 (the 8 B left are the two norms' fp32 reciprocal RMS per token)
    predicted = fused_layer_per_token() + eager_layer_bytes(inputs(Method.FULL)) / SEQ
    assert predicted == pytest.approx(25120.0)
    assert predicted == pytest.approx(MEASURED["full"] - ROTARY, rel=0.001)


def test_a_frozen_base_layer_is_what_the_fused_formula_counts():
    # no weight gradient: the linear layers keep no input, the norms' fp32 copies take their place (0 at bf16)
    # so with rank 0 the eager extra of a LoRA layer is the adapters' fp32 input copies alone: 4·(3·512 + 512)
    assert eager_layer_bytes(replace(inputs(Method.LORA), lora_rank=0.0)) / SEQ == pytest.approx(4 * 4 * 512)
    base = fused_layer_per_token()
    assert base == pytest.approx(MEASURED["frozen_base"] - ROTARY, rel=0.001)


def test_peft_adapters_keep_fp32_input_copies():
    # all-linear LoRA rank 8: fp32 copies of q, k, v, o, gate, up inputs (512 wide) and down's (1,792 wide),
    # and seven fp32 A outputs: 4·(6·512 + 1,792) + 7·4·8 = 19,680 B per token over the frozen base
    p = inputs(Method.LORA, all_linear=1.0)
    s = SHAPE
    counted = lora_adapter_bytes(
        SEQ, 1.0, s["hidden"], s["n_heads"], s["head_dim"], s["ffn_hidden"], 3.0, 2.0, 8.0, 1.0
    )
    adapters = (counted + eager_layer_bytes(p)) / SEQ
    assert adapters == pytest.approx(19680.0)
    assert adapters == pytest.approx(MEASURED["lora_all_linear"] - MEASURED["frozen_base"])
    # under autocast (a mixed recipe) the copies and A outputs are 16-bit: 2·(6·512 + 1,792) + 7·2·8 = 9,840;
    # measured 10,160, the rest being the adapters' weight casts autocast caches (per step, not per token)
    mixed = (counted + eager_layer_bytes(inputs(Method.LORA, 1.0, master_bytes=4.0))) / SEQ
    assert mixed == pytest.approx(9840.0)
    assert mixed == pytest.approx(MEASURED["lora_all_linear_autocast"] - MEASURED["frozen_base"], rel=0.04)


def test_the_flag_raises_an_8b_lora_plan_by_the_adapter_copies():
    cats = default_catalogs()
    plan = Scenario(
        model="Llama 3.1 8B",
        method="lora",
        gpu="H100 SXM",
        seq_len=2048,
        recompute="none",
        micro_batch=1,
        lora_targets="attention",
    )
    fused, eager = estimate(plan, cats), estimate(plan.updated(hf_eager_code=True), cats)
    # bf16_mixed runs under autocast: q, k, v, o adapters keep 16-bit input copies, 2·(3·4,096 + 4,096) B per token
    # per layer (A's outputs already counted), × 2,048 tokens × 32 layers = 2.0 GiB; and once, the last layer's
    # widest forward point (eager.peft_widest_point_bytes): 6 B per element of q's 4,096-wide output
    expected_gib = (2 * 4 * 4096 * 2048 * 32 + 6 * 4096 * 2048) / 2**30
    assert eager.activations_gib - fused.activations_gib == pytest.approx(expected_gib, rel=1e-6)
    assert eager.activations_gib > fused.activations_gib
