"""A plain pipeline whose layers do not split into pp equal stages: Megatron-LM's validate_args asserts
num_layers % pp == 0 unless the embedding and loss are counted as layers or the first and last stages are given
(megatron/training/arguments.py at core_v0.19.2), so the export writes one of those (make test-exports runs such
files through validate_args)."""

from __future__ import annotations

import pytest

from planner import Scenario, default_catalogs, export_plan
from planner.model.layer_split import uneven_first_last


def _flags(**fields) -> list[str]:
    return export_plan(Scenario(**fields), default_catalogs(), "megatron").text.split()


def _value(words: list[str], flag: str) -> int:
    return int(words[words.index(flag) + 1])


@pytest.mark.parametrize(("n_layers", "pp"), [(61, 8), (28, 8), (61, 2), (9, 8), (30, 4), (126, 16), (33, 5)])
def test_ends_and_middle_stages_hold_every_layer_with_the_middle_even(n_layers, pp):
    first, last = uneven_first_last(n_layers, pp)
    middle = n_layers - first - last
    assert first >= 1 and last >= 1 and middle >= 0
    if pp > 2:
        assert middle % (pp - 2) == 0
        assert max(first, last) <= -(-n_layers // pp)  # no stage busier than the planner's n / pp rounded up


def test_deepseek_v3_61_layers_on_8_stages_gets_explicit_ends():
    # 61 layers: 6 middle stages of ceil(61 / 8) = 8, ends 7 (with the embedding) and 6 (with the loss)
    words = _flags(model="DeepSeek-V3", n_gpus=256, ep=32, pp=8, zero_stage=1, grad_accum=8)
    first = _value(words, "--decoder-first-pipeline-num-layers")
    last = _value(words, "--decoder-last-pipeline-num-layers")
    assert (first, last) == (7, 6)


def test_two_stages_give_the_first_one_only():
    words = _flags(model="DeepSeek-V3", n_gpus=256, ep=32, pp=2, zero_stage=1, grad_accum=8)
    assert _value(words, "--decoder-first-pipeline-num-layers") == 31
    assert "--decoder-last-pipeline-num-layers" not in words


def test_embedding_and_loss_counted_when_that_evens_the_split():
    # Llama 3.2 1B: 16 layers + embedding + loss = 18 = 3 stages of 6
    words = _flags(model="Llama 3.2 1B", n_gpus=3, pp=3, zero_stage=1, grad_accum=3)
    assert "--account-for-embedding-in-pipeline-split" in words
    assert "--account-for-loss-in-pipeline-split" in words
    assert "--decoder-first-pipeline-num-layers" not in words


def test_an_even_split_adds_nothing():
    words = _flags(model="Llama 3.1 8B", n_gpus=16, pp=2, zero_stage=1, grad_accum=8)
    assert not any(w.startswith(("--account-for", "--decoder-first", "--decoder-last")) for w in words)
