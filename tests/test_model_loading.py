"""The model-loading peak (memory tails): `model_loading` "sharded" or "full_on_gpu".

Mechanism (planner/formulas/memory/loading.py, planner/inputs/loading_inputs.py): a model put on the GPU whole before
FSDP wraps it (`model.cuda()` then `FullyShardedDataParallel(...)`, or `from_pretrained(device_map="cuda")`)
holds every weight at the recipe's dtype on every GPU, plus one layer while FSDP1 flattens it (`torch.cat` in
`FlatParamHandle.flatten_tensors`), plus the modelled device overhead (planner/formulas/memory/device_overhead.py): 0.75 GiB CUDA context, 2 × 32 MiB
cuBLAS workspaces and, every plan here being data parallel only, one NCCL communicator of 256 MiB: 1.0625 GiB.
Sizes: Llama 3.1 70B has 70,553,706,496 parameters, 80 layers, untied 128,256 × 8,192 embedding and head;
Llama 3.1 8B has 8,030,261,248, 32 layers, untied 128,256 × 4,096 embedding and head (Meta's model cards;
the planner's presets count the same). The H100 SXM has 79.65 GiB usable (the catalogue's vram_gib).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.cases.case_file import CASE_FILE_COLUMNS, row_problems
from planner.catalogue.catalog import default_catalogs
from planner.estimate import estimate
from planner.formulas.memory.peak import memory_per_gpu
from planner.inputs.scenario import Scenario
from tests.test_memory import llama

GIB = 2.0**30
OVERHEAD_BYTES = (0.75 + 2 * 32 / 1024 + 0.25) * GIB  # the modelled overhead with one communicator
N_70B, EDGE_70B = 70_553_706_496, 128_256 * 8_192  # parameters; embedding (= head) parameters
N_8B, EDGE_8B = 8_030_261_248, 128_256 * 4_096
H100_GIB = 79.65
CATS = default_catalogs()


def _loading_bytes(n_params: int, edge: int, n_layers: int, bytes_per_param: float) -> float:
    """Whole model + one layer (the parameters outside embedding and head, over the layers) + overhead."""
    return n_params * bytes_per_param + (n_params - 2 * edge) / n_layers * bytes_per_param + OVERHEAD_BYTES


def _plan(**choices) -> Scenario:
    return Scenario(**{"model": "Llama 3.1 70B", "gpu": "H100 SXM", "n_gpus": 32, "zero_stage": 3, **choices})


def test_70b_loaded_whole_cannot_start_on_80_gb_gpus_although_sharded_training_fits():
    # bf16 weights: 70,553,706,496 × 2 B = 141.107e9 B (141.1 GB); one layer (70,553,706,496 − 2 × 1,050,673,152)
    # / 80 = 855,654,502.4 parameters × 2 B = 1.711e9 B; + 1.0625 GiB: 143.959e9 B = 134.07 GiB > 79.65 GiB.
    expected_gib = _loading_bytes(N_70B, EDGE_70B, 80, 2.0) / GIB
    assert expected_gib == pytest.approx(134.0728, abs=1e-4)
    sharded, whole = estimate(_plan(), CATS), estimate(_plan(model_loading="full_on_gpu"), CATS)
    # ZeRO-3 over 32 GPUs: 16 B/param × 70.55e9 / 32 = 35.3e9 B of states per GPU plus activations: it fits.
    assert sharded.fits_vram is True and sharded.loading_peak_gib == 0.0
    assert sharded.peak_gib_per_device < H100_GIB
    assert whole.loading_peak_gib == pytest.approx(expected_gib, rel=1e-9)
    assert whole.peak_gib_per_device == pytest.approx(expected_gib, rel=1e-9)
    assert whole.peak_phase == "model loading (before sharding)"
    assert whole.fits_vram is False and whole.max_micro_batch == 0
    assert whole.headroom_gib == pytest.approx(H100_GIB - expected_gib, rel=1e-9)
    # the training step itself is the same plan either way
    assert whole.weights_gib == sharded.weights_gib and whole.activations_gib == sharded.activations_gib


def test_8b_loading_peak_stays_below_training_so_the_peak_is_unchanged():
    # 8,030,261,248 × 2 B = 16.061e9 B; one layer (8,030,261,248 − 2 × 525,336,576) / 32 = 218,112,128 × 2 B
    # = 0.436e9 B; + 1.0625 GiB = 17.638e9 B = 16.426 GiB, below the 8B full fine-tune's ZeRO-3 training peak on 8 GPUs.
    expected_gib = _loading_bytes(N_8B, EDGE_8B, 32, 2.0) / GIB
    assert expected_gib == pytest.approx(16.4263, abs=1e-4)
    plan = {"model": "Llama 3.1 8B", "n_gpus": 8}
    sharded = estimate(_plan(**plan), CATS)
    whole = estimate(_plan(**plan, model_loading="full_on_gpu"), CATS)
    assert whole.loading_peak_gib == pytest.approx(expected_gib, rel=1e-9)
    assert sharded.peak_gib_per_device > expected_gib
    assert whole.peak_gib_per_device == sharded.peak_gib_per_device
    assert whole.peak_phase == sharded.peak_phase != "model loading (before sharding)"
    assert whole.max_micro_batch == sharded.max_micro_batch


def test_load_dtype_follows_the_recipe():
    # fp32 run: 4 B per parameter. MemoryInputs of Llama 3.1 8B as tests/test_memory.py builds them (8.03e9
    # parameters): 8.03e9 × 4 + (8.03e9 − 2 × 525,336,576) / 32 × 4 + 1.0625 GiB; bf16: the same with 2 B.
    for precision, width in (("fp32", 4.0), ("bf16_mixed", 2.0)):
        p = llama(precision=precision, dp=8, zero_stage=3, full_model_load=1)
        expected = 8.03e9 * width + (8.03e9 - 2 * EDGE_8B) / 32 * width + OVERHEAD_BYTES
        assert float(memory_per_gpu(p).loading_peak_bytes) == pytest.approx(expected, rel=1e-12)


def test_qlora_base_loads_at_its_4_bit_size():
    # QLoRA quantises as it loads (bitsandbytes under from_pretrained): the whole-model figure is the NF4
    # base plus 16-bit embedding, head and adapters, the recipe's weights of the unsharded model, far below bf16.
    p = llama(method="qlora", dp=8, zero_stage=3, full_model_load=1)
    whole = memory_per_gpu(replace(p, dp=1.0, zero_stage=0.0)).weights_bytes
    loading = float(memory_per_gpu(p).loading_peak_bytes)
    assert float(whole) + OVERHEAD_BYTES < loading < 1.1 * float(whole) + OVERHEAD_BYTES
    assert loading - OVERHEAD_BYTES < 8.03e9 * 2.0 / 2  # weights: under half the bf16 16.06e9 B


def test_post_training_peak_names_the_loading_phase():
    # DPO with LoRA on 70B over 8 GPUs: the policy and its reference fit sharded, loaded whole they cannot.
    dpo = {"method": "lora", "n_gpus": 8, "post_training": "dpo"}
    sharded, whole = estimate(_plan(**dpo), CATS), estimate(_plan(**dpo, model_loading="full_on_gpu"), CATS)
    assert sharded.fits_vram is True
    assert whole.peak_phase == "model loading (before sharding)" and whole.fits_vram is False
    assert whole.peak_gib_per_device == pytest.approx(whole.loading_peak_gib, rel=1e-12)
    assert whole.training_phase_gib == pytest.approx(sharded.training_phase_gib, rel=1e-12)


def test_post_training_sentence_names_the_loading_phase():
    from ui.post_training_view import peak_sentence

    grpo = {"method": "lora", "n_gpus": 16, "post_training": "grpo", "model_loading": "full_on_gpu"}
    whole = estimate(_plan(**grpo), CATS)
    assert peak_sentence(whole).startswith("The peak is in the model-loading phase")
    assert f"{whole.loading_peak_gib:,.2f} GiB while the whole model loads" in peak_sentence(whole)


def test_the_fix_list_offers_loading_sharded():
    from planner.decide.fixes import suggest_fixes
    from planner.resolve import resolve

    fixes = suggest_fixes(resolve(_plan(model_loading="full_on_gpu"), CATS), CATS)
    loading = [fix for fix in fixes if fix.change == {"model_loading": "sharded"}]
    assert loading and loading[0].label == "Load the model sharded"
    # the sharded plan's estimate fits; it counts as fitting only when the memory band's high end does too
    vram_gib = estimate(_plan(), CATS).vram_gib
    assert loading[0].peak_gib <= vram_gib
    assert loading[0].fits == (loading[0].peak_gib_high <= vram_gib)


def test_plan_search_drops_80_gb_plans_when_the_model_loads_whole():
    from planner.decide.sweep import Constraints, search

    lora = _plan(method="lora", n_gpus=8)
    whole = lora.updated(model_loading="full_on_gpu")

    def fitting(base: Scenario, gpu: str) -> int:
        return search(base, Constraints(gpus=(gpu,)), top_n=3, catalogs=CATS, explain_misses=False).n_fit

    # every H100 layout needs the 135.4 GiB loading peak first, more than its 79.65 GiB; a B200's 179 GiB holds it
    assert fitting(lora, "H100 SXM") > 0 and fitting(whole, "H100 SXM") == 0
    assert fitting(whole, "B200") > 0


# --- properties: the loading phase never lowers the peak; without sharding it changes nothing -------------
PLANS = st.fixed_dictionaries(
    {
        "model": st.sampled_from(["Llama 3.1 8B", "Llama 3.1 70B", "Qwen2.5 7B", "Mixtral 8x7B"]),
        "method": st.sampled_from(["full", "lora", "qlora"]),
        "precision": st.sampled_from(["bf16_mixed", "fp32", "bf16_pure"]),
        "n_gpus": st.sampled_from([1, 2, 8, 64]),
        "zero_stage": st.integers(0, 3),
        "micro_batch": st.integers(1, 8),
        "grad_accum": st.integers(1, 4),
        "offload_optimizer": st.booleans(),
    }
)


@settings(max_examples=40, deadline=None)
@given(PLANS)
def test_loading_whole_never_lowers_the_peak_and_sharded_is_the_training_peak(plan):
    sharded = estimate(Scenario(gpu="H100 SXM", **plan), CATS)
    whole = estimate(Scenario(gpu="H100 SXM", model_loading="full_on_gpu", **plan), CATS)
    training_gib = sharded.peak_gib_per_device
    assert sharded.loading_peak_gib == 0.0 and sharded.peak_phase != "model loading (before sharding)"
    assert whole.peak_gib_per_device == pytest.approx(max(training_gib, whole.loading_peak_gib), rel=1e-12)
    assert whole.peak_gib_per_device >= training_gib
    if plan["n_gpus"] == 1:  # nothing to shard: the weights are on the GPU anyway, so nothing changes
        assert whole.peak_gib_per_device == training_gib and whole.fits_vram == sharded.fits_vram


# --- inputs: case-file column, share link, CLI ------------------------------------------------------------
def test_case_file_model_loading_column():
    row = dict.fromkeys(CASE_FILE_COLUMNS, "")
    row.update(case_id="x", category="memory", measured_unit="gib_peak_allocated_per_gpu", measured_value="1")
    assert row_problems({**row, "model_loading": "FULL_ON_GPU"}) == []
    assert row_problems(row) == []  # optional: blank or absent = sharded
    problems = row_problems({**row, "model_loading": "meta"})
    assert problems == [("model_loading", "'meta' is not one of sharded, full_on_gpu (or empty = sharded)")]


def test_model_loading_travels_in_share_links_and_rejects_other_words():
    from planner.cli.cli_args import flag_name
    from planner.inputs.query import scenario_from_query, scenario_to_query

    back, notices = scenario_from_query(scenario_to_query(Scenario(model_loading="full_on_gpu")))
    assert (back.model_loading, notices) == ("full_on_gpu", [])
    assert flag_name("model_loading") == "--model-loading"
    with pytest.raises(ValueError, match="model_loading"):
        Scenario(model_loading="meta")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "planner", "estimate", *args], capture_output=True, text=True, check=False
    )


def test_cli_estimate_shows_the_loading_peak():
    plan = ("--model", "Llama 3.1 70B", "--gpu", "H100 SXM", "--devices", "32", "--set", "zero_stage=3")
    done = _cli(*plan, "--model-loading", "full_on_gpu", "--format", "json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["loading_peak_gib"] == pytest.approx(_loading_bytes(N_70B, EDGE_70B, 80, 2.0) / GIB, rel=1e-9)
    assert out["peak_phase"] == "model loading (before sharding)" and out["fits_vram"] is False
    bad = _cli(*plan, "--model-loading", "meta")
    assert bad.returncode == 2 and "--model-loading" in bad.stderr and "full_on_gpu" in bad.stderr
    assert "Traceback" not in bad.stderr


# --- app ----------------------------------------------------------------------------------------------------
def test_app_select_sets_model_loading_and_the_memory_page_shows_the_peak(app):
    from ui.memory_inputs import MODEL_LOADING_LABELS
    from ui.state import SCENARIO_KEY
    from ui.training_setup import OPEN_KEY

    assert tuple(MODEL_LOADING_LABELS) == ("sharded", "full_on_gpu")
    app.session_state[OPEN_KEY] = True  # the sidebar's training setup draws its inputs only while open
    app.switch_page("app_pages/memory.py").run()
    assert any("Peak while loading" in md.value and "loaded sharded" in md.value for md in app.markdown)
    app.selectbox(key="w.model_loading").set_value("full_on_gpu").run()
    assert not app.exception
    chosen = app.session_state[SCENARIO_KEY]
    assert chosen.model_loading == "full_on_gpu"
    shown = estimate(chosen, CATS).loading_peak_gib
    assert any("Peak while loading" in md.value and f"{shown:,.2f} GiB" in md.value for md in app.markdown)
