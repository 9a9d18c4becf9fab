"""Post-training: the formulas with their arithmetic written out, and the plans the issue names.

Golden shapes: Llama 3.1 8B's config.json (data/models.csv: 32 layers, 8 KV heads, head dim 128,
8,030,261,248 parameters); H100 SXM from data/gpus.csv (80 GB class, 3.35 TB/s, 989.5 dense bf16 TFLOP/s).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from pydantic import ValidationError

from planner.catalogue.catalog import default_catalogs
from planner.errors import PlannerError
from planner.estimate import estimate
from planner.formulas.post_training import generation as gen
from planner.formulas.post_training import side_models as post
from planner.inputs.errors import scenario_error
from planner.inputs.scenario import Scenario

CATS = default_catalogs()
LLAMA_8B_PARAMS = 8_030_261_248
GIB = 2.0**30


def plan(**changes: object) -> Scenario:
    return Scenario(model="Llama 3.1 8B", gpu="H100 SXM", n_gpus=8, **changes)  # type: ignore[arg-type]


# --- formulas: written-out arithmetic --------------------------------------------------------------------


def test_kv_cache_of_llama_8b_per_token_and_for_a_batch() -> None:
    # 32 layers × 2 (K and V) × 8 KV heads × 128 head dim × 2 bytes = 131,072 B = 128 KiB per token
    assert gen.kv_cache_bytes_per_seq(32, 8, 128, 1) == 131_072
    # 16 sequences of 1,024 tokens: 16 × 1,024 × 128 KiB = 2 GiB exactly
    assert 16 * gen.kv_cache_bytes_per_seq(32, 8, 128, 1024) == 2 * GIB


def _engine(**changes: float) -> gen.Engine:
    values = dict(
        n_params=8e9,
        n_active_params=8e9,
        kv_bytes_per_token=131_072.0,
        tp=1.0,
        sequences=16.0,
        prompt_tokens=512.0,
        completion_tokens=256.0,
        engine_bytes=40e9,
        peak_flops_per_s=989.5e12,
        utilisation_frac=0.4,
        memory_gb_per_s=3350.0,
        bandwidth_frac=0.6,
    )
    return gen.Engine(**{**values, **changes})


def test_decode_step_is_bound_by_weights_and_kv_reads() -> None:
    # bytes read: 8e9 × 2 B weights = 16e9, plus 16 sequences × 131,072 B × (512 + 256/2 = 640 tokens)
    # = 1.34218e9; at 3,350 GB/s × 0.6 = 2,010 GB/s: 17.34218e9 / 2.01e12 = 8.628 ms.
    # The FLOPs floor, 2 × 8e9 × 16 / (989.5e12 × 0.4) = 0.647 ms, is below it.
    expected_s = (16e9 + 16 * 131_072 * 640) / 2.01e12
    assert gen.decode_token_s(_engine(), 16.0) == pytest.approx(expected_s, rel=1e-12)
    assert expected_s == pytest.approx(8.628e-3, rel=1e-3)


def test_decode_of_a_huge_batch_turns_compute_bound() -> None:
    # 100,000 sequences of a 1-token context: bytes 16e9 + 1e5 × 131,072 × 1.5 = 3.566e10 → 17.7 ms;
    # FLOPs 2 × 8e9 × 1e5 / (989.5e12 × 0.4) = 4.042 s: compute bound
    e = _engine(prompt_tokens=1.0, completion_tokens=1.0)
    assert gen.decode_token_s(e, 1e5) == pytest.approx(2 * 8e9 * 1e5 / (989.5e12 * 0.4), rel=1e-12)


def test_concurrency_is_what_the_engine_memory_holds_after_its_weights() -> None:
    # 40e9 B share − 16e9 B weights = 24e9 B; a sequence at full length 768 tokens holds 768 × 131,072
    # = 100.66e6 B: floor(24e9 / 100.66e6) = 238 sequences, capped at the 16 to generate
    assert gen.concurrent_sequences(_engine()) == 16
    assert gen.concurrent_sequences(_engine(sequences=1000.0)) == 238
    assert gen.concurrent_sequences(_engine(engine_bytes=16e9)) == 0  # only the weights fit


def test_generation_of_one_rollout_is_rounds_times_prefill_and_decode() -> None:
    e = _engine(sequences=476.0)  # twice the 238 that fit: two rounds
    prefill = 2 * 8e9 * 512 * 238 / (989.5e12 * 0.4)
    decode = 256 * gen.decode_token_s(e, 238.0)
    assert gen.generation_s(e) == pytest.approx(2 * (prefill + decode), rel=1e-12)


def test_weight_hand_over_sends_16_bit_weights_split_over_the_engine_tp() -> None:
    # 8e9 × 2 B / tp 2 = 8e9 B per GPU over 450 GB/s NVLink = 17.8 ms
    assert gen.weight_sync_s(8e9, 2.0, 450.0) == pytest.approx(8e9 / 450e9, rel=1e-12)


def test_reference_memory_is_its_weights_sharded_like_the_policy() -> None:
    # Llama 3.1 8B in bf16: 8,030,261,248 × 2 B = 16.06 GB; ZeRO-3 over 8 GPUs: 2.0076e9 B = 1.870 GiB;
    # ZeRO-2 keeps a whole copy per data-parallel rank (split only over tp·pp = 2 here)
    sharded = post.frozen_model_bytes(LLAMA_8B_PARAMS, 2.0, 1, 1, 8, 3)
    assert sharded == LLAMA_8B_PARAMS * 2 / 8
    assert sharded / GIB == pytest.approx(1.870, abs=5e-4)
    assert post.frozen_model_bytes(LLAMA_8B_PARAMS, 2.0, 2, 1, 4, 2) == LLAMA_8B_PARAMS * 2 / 2


def test_training_phase_holds_the_trainee_in_backward_next_to_the_other() -> None:
    p = post.Phases(
        policy_peak=50.0, policy_resident=30.0, value_peak=40.0, value_resident=25.0, frozen=4.0,
        engine=10.0, engine_sleeps=0.0, fragmentation_frac=0.1, overhead=2.0,
    )  # fmt: skip
    # max(50 + 25, 40 + 30) + 4 = 79 allocated; × 1.1 + 2 + 10 (engine awake) = 98.9
    assert post.training_phase_bytes(p) == pytest.approx(98.9)
    # generating: (30 + 25 + 4) × 1.1 + 2 + 10 = 76.9
    assert post.generation_phase_bytes(p) == pytest.approx(76.9)
    asleep = post.Phases(**{**p.__dict__, "engine_sleeps": 1.0})
    assert post.training_phase_bytes(asleep) == pytest.approx(88.9)


# --- the plans the issue's "done when" names -------------------------------------------------------------


def test_dpo_holds_a_reference_and_peaks_above_full_fine_tuning() -> None:
    full, dpo = estimate(plan(), CATS), estimate(plan(method="dpo"), CATS)
    assert dpo.reference_model_gib == pytest.approx(LLAMA_8B_PARAMS * 2 / 8 / GIB, rel=1e-9)
    assert dpo.peak_gib_per_device is not None and full.peak_gib_per_device is not None
    assert dpo.peak_gib_per_device > full.peak_gib_per_device + dpo.reference_model_gib
    # chosen + rejected: twice the sequences, twice the optimizer-step time's compute, plus the reference
    assert dpo.training_tokens == pytest.approx(2 * full.training_tokens)
    # (compared on the matrix multiplies: 8B FULL_SHARD on 8 GPUs waits on its gathers at one sequence per
    # GPU, so the full run's step is not all compute and its wall clock does not double)
    assert dpo.scoring_time_h > 0 and dpo.gemm_time_s > 2 * full.gemm_time_s * 0.95
    assert dpo.wall_clock_h > full.wall_clock_h + dpo.scoring_time_h


def test_lora_dpo_against_its_base_holds_no_reference_copy() -> None:
    lora = estimate(plan(post_training="dpo", method="lora"), CATS)
    assert lora.reference_model_gib == 0.0
    assert lora.scoring_time_h > 0  # the base still runs its forward, with the adapters off
    copy = estimate(plan(post_training="dpo", method="lora", reference="copy"), CATS)
    assert copy.reference_model_gib > 1.8


def test_precomputed_and_offloaded_references_leave_the_gpus() -> None:
    base = estimate(plan(method="dpo"), CATS)
    pre = estimate(plan(method="dpo", reference="precomputed"), CATS)
    off = estimate(plan(method="dpo", reference="offload"), CATS)
    assert pre.reference_model_gib == 0.0 == off.reference_model_gib
    assert pre.scoring_time_h == pytest.approx(base.scoring_time_h / 3)  # one pass over the data, 3 epochs
    assert off.host_offload_gib > base.host_offload_gib
    assert off.scoring_time_h > base.scoring_time_h  # the copy streams in over PCIe


def grpo(**changes: object) -> Scenario:
    return plan(method="grpo", micro_batch=4, grad_accum=4, completion_tokens=512, **changes)


def test_grpo_generates_with_a_kv_cache_and_reports_its_share_of_time() -> None:
    e = estimate(grpo(), CATS)
    assert e.kv_cache_gib > 0 and e.generation_time_h > 0
    assert 0 < e.generation_frac < 1
    # no batch given: the trainers' default of 1,024 prompts per rollout step (verl's train_batch_size), so
    # 30,000 prompts × 3 epochs take 90,000 / 1,024 = 87.9 rollout steps
    assert e.rollout_prompts == 1024
    assert e.n_rollouts == pytest.approx(90_000 / 1024, rel=1e-9)
    parts = e.step_generation_s + e.step_scoring_s + e.step_training_s + e.step_weight_sync_s
    assert e.post_step_time_s == pytest.approx(parts, rel=1e-9)
    assert e.wall_clock_h == pytest.approx(e.n_rollouts * e.post_step_time_s / 3600, rel=1e-6)


def test_doubling_samples_per_prompt_raises_generation_time() -> None:
    # The rollout step's 1,024 prompts make 8,192 or 16,384 completions: far more than the KV cache holds at
    # once, so the engine runs full either way and twice the completions take twice as long
    eight, sixteen = estimate(grpo(samples_per_prompt=8), CATS), estimate(grpo(samples_per_prompt=16), CATS)
    assert sixteen.n_rollouts == eight.n_rollouts
    assert sixteen.concurrent_sequences == eight.concurrent_sequences
    assert sixteen.generation_time_h == pytest.approx(2 * eight.generation_time_h, rel=0.01)
    # 16 prompts a step either way: each step decodes twice the sequences at once, which reads the same
    # weights for more tokens, so it takes longer but less than twice as long (decode is bandwidth bound)
    eight, sixteen = (estimate(grpo(samples_per_prompt=n, rollout_prompts=16), CATS) for n in (8, 16))
    assert eight.generation_time_h < sixteen.generation_time_h < 2 * eight.generation_time_h


def test_dedicated_generation_gpus_are_paid_for() -> None:
    colocated, split = estimate(grpo(), CATS), estimate(grpo(generation_gpus=8), CATS)
    assert split.device_hours == pytest.approx(split.wall_clock_h * 16, rel=1e-9)
    assert colocated.device_hours == pytest.approx(colocated.wall_clock_h * 8, rel=1e-9)
    assert split.generation_phase_gib == 0.0  # training GPUs never hold the engine


def test_ppo_holds_reward_and_value_models_and_trains_the_value_model() -> None:
    ppo, grpo_plan = estimate(plan(method="ppo"), CATS), estimate(plan(method="grpo"), CATS)
    assert ppo.reward_model_gib == pytest.approx(LLAMA_8B_PARAMS * 2 / 8 / GIB, rel=1e-9)
    assert ppo.value_model_gib > ppo.reward_model_gib  # trained: weights, optimizer states and master copy
    assert grpo_plan.reward_model_gib == 0.0 == grpo_plan.value_model_gib  # a rule-based reward by default
    small = estimate(plan(method="ppo", reward_model="Llama 3.2 1B"), CATS)
    assert small.reward_model_gib < ppo.reward_model_gib / 5
    assert small.value_model_gib < ppo.value_model_gib / 5  # the value model follows the reward model


def test_an_engine_share_that_holds_only_the_weights_does_not_fit() -> None:
    # 0.18 × 79.65 GiB = 15.39e9 B < the 16.06e9 B of 16-bit weights: no room for one sequence's KV cache
    e = estimate(grpo(generation_memory_frac=0.18), CATS)
    assert e.concurrent_sequences == 0 and e.fits_vram is False


def test_a_sleeping_engine_lets_the_generation_phase_peak() -> None:
    e = estimate(grpo(generation_sleeps=True, generation_memory_frac=0.9), CATS)
    assert e.peak_phase == "generation (rollouts)"
    assert e.peak_gib_per_device == pytest.approx(e.generation_phase_gib)


def test_supervised_plans_are_unchanged_by_the_post_training_inputs() -> None:
    e = estimate(plan(samples_per_prompt=4, generation_gpus=8), CATS)  # inert without an online objective
    plain = estimate(plan(), CATS)
    assert e.wall_clock_h == plain.wall_clock_h and e.peak_gib_per_device == plain.peak_gib_per_device
    assert e.device_hours == plain.device_hours and e.generation_time_h == 0.0


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"method": "grpo", "samples_per_prompt": 1}, "samples_per_prompt"),
        ({"method": "grpo", "completion_tokens": 1000}, "completion_tokens"),
        ({"post_training": "dpo", "reference": "base"}, "reference"),
        ({"post_training": "simpo", "reference": "copy"}, "reference"),
    ],
)
def test_inconsistent_post_training_inputs_are_refused_by_name(changes: dict, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        plan(**changes)
    assert scenario_error(err.value).field == field


def test_an_unknown_reward_model_is_refused_naming_the_field() -> None:
    with pytest.raises(PlannerError) as err:
        estimate(plan(method="ppo", reward_model="Llama 9 1T"), CATS)
    assert err.value.field == "reward_model"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner", *args], capture_output=True, text=True)


def test_cli_dpo_json_keys_as_the_issue_states() -> None:
    base = ["estimate", "--model", "Llama 3.1 8B", "--gpu", "H100 SXM", "--devices", "8", "--format", "json"]
    dpo = json.loads(run_cli(*base, "--method", "dpo").stdout)
    full = json.loads(run_cli(*base, "--method", "full").stdout)
    assert dpo["reference_model_gib"] > 0 and dpo["peak_gib_per_device"] > full["peak_gib_per_device"]
    lora = json.loads(
        run_cli(*base, "--post-training", "dpo", "--method", "lora", "--reference", "base").stdout
    )
    assert lora["reference_model_gib"] == 0
    for key in (
        "reward_model_gib",
        "value_model_gib",
        "kv_cache_gib",
        "generation_time_h",
        "training_time_h",
    ):
        assert key in dpo
    assert np.isclose(dpo["generation_frac"], 0.0)


def test_cli_refuses_a_bad_group_size_with_the_flag_named() -> None:
    done = run_cli("estimate", "--method", "grpo", "--samples-per-prompt", "1", "--format", "json")
    assert done.returncode == 2 and "--samples-per-prompt" in done.stderr and "Traceback" not in done.stderr


def test_an_exported_post_training_plan_says_what_its_file_leaves_out() -> None:
    from planner.export.exporters import export_plan

    sft, dpo = (export_plan(plan(**changes), CATS, "deepspeed") for changes in ({}, {"method": "dpo"}))
    assert not any("objective" in line for line in sft.not_expressed)
    assert any(line.startswith("the dpo objective") for line in dpo.not_expressed)


def test_latent_attention_caches_its_latent_not_per_head_keys_and_values() -> None:
    # DeepSeek-V3's config.json: 61 layers, kv_lora_rank 512 + qk_rope_head_dim 64 = 576 elements per token and
    # layer, 2 bytes: 61 × 576 × 2 = 70,272 B per token (the per-head form, 128 heads × 2 × 192, would be 66×)
    assert gen.kv_cache_bytes_per_token(61, 512 + 64) == 70_272
    assert gen.kv_cache_bytes_per_token(32, 2 * 8 * 128) == gen.kv_cache_bytes_per_seq(32, 8, 128, 1)


def test_an_eager_engine_beside_the_trainer_grows_into_the_memory_training_leaves() -> None:
    """An eager colocated engine (DeepSpeed-Chat's hybrid engine, Hugging Face generate) keeps no pool: its
    KV cache takes what the trainer's kept states leave while it generates, and nothing while training runs.
    LoRA GRPO on Llama 3.1 8B, 8 H100 SXM (79.65 GiB), 8,192 sequences of 1,000 tokens per rollout."""
    lora = dict(method="lora", micro_batch=8, grad_accum=16, completion_tokens=512, rollout_prompts=1024)
    eager = estimate(plan(post_training="grpo", generation_engine="eager", **lora), CATS)  # type: ignore[arg-type]
    pooled = estimate(plan(post_training="grpo", **lora), CATS)  # type: ignore[arg-type]
    vram, weights = 79.65 * GIB, LLAMA_8B_PARAMS * 2.0  # the engine's 16-bit weights at generation TP 1
    per_seq = 1_000 * 131_072  # the default 1,000 tokens an example (488 prompt + 512 completion) × 128 KiB
    trainer = eager.generation_phase_gib * GIB - eager.kv_cache_gib * GIB - weights  # kept states + slack
    room = vram - trainer
    assert 0 < room - weights < 8192 / 8 * per_seq  # the room binds: fewer than the 1,024 per replica fit
    assert eager.concurrent_sequences == np.floor((room - weights) / per_seq)
    assert eager.kv_cache_gib * GIB == pytest.approx(eager.concurrent_sequences * per_seq, rel=1e-12)
    assert eager.peak_gib_per_device * GIB == pytest.approx(vram, rel=0.01)  # it fills the device, no more
    # vLLM's pool (TRL's colocate default 0.3) holds fewer sequences and stays awake through training:
    assert pooled.concurrent_sequences < eager.concurrent_sequences
    assert pooled.training_phase_gib - eager.training_phase_gib == pytest.approx(0.3 * 79.65, rel=1e-9)
