"""The device peak while the model is loaded and first sharded (memory tails), in bytes.

Loaded sharded (meta-device init then a sharded state dict, DeepSpeed's zero.Init, accelerate's CPU-RAM-
efficient loading, FSDP1 moving a CPU model unit by unit: `planner.inputs.loading_inputs`), a rank holds its
shard plus one unit being filled in, never more than the training step holds, so no loading term is charged.

Loaded whole onto each GPU first (`full_model_load` = 1: `model.cuda()` before FSDP, or `from_pretrained(...,
device_map="cuda")`), every GPU holds all of the model's weights at the recipe's weight dtype (the dtype the
trainer loads and shards: bf16 2 B per parameter under bf16 recipes, fp32 4 B in an fp32 run, NF4 for a QLoRA
base, `planner.formulas.memory.recipes`). FSDP1 then flattens one unit at a time: `torch.cat` of the unit's parameters
into a new flat parameter before the originals are released and the flat one is cut to its shard
(torch/distributed/fsdp/_flat_param.py at fe03cf693c7c774a88c01cd0bc52f80402b8437f: `flatten_tensors` returns
`torch.cat(...)`, and `shard` "allocates new memory for the sharded flat parameter and frees the unsharded flat
parameter's storage"), so the first unit, a
transformer layer under the usual auto-wrap policy (children are wrapped before the root, so the embedding and
head unit comes last, when the layers are already shards), exists twice for a moment:
    loading peak = whole model's weights + one layer's weights + overhead (CUDA context, workspaces).
No allocator slack is added: the loaded tensors are allocated once and none is freed before the peak, so the
caching allocator has no freed blocks to fragment.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from planner.formulas.memory.activations import FloatOrArray
from planner.formulas.memory.device_overhead import overhead_bytes
from planner.formulas.memory.memory_inputs import MemoryInputs
from planner.formulas.memory.model_states import layer_parameters, override_scale, stage_model_states

# every parallel degree a Scenario can set: 1 = the whole model on one GPU
_UNSHARDED = dict.fromkeys(("tp", "pp", "cp", "dp", "ep", "etp"), 1.0)


def whole_model(p: MemoryInputs) -> MemoryInputs:
    """The same model and recipe on one GPU: no tensor, pipeline, context, data or expert parallelism, no
    ZeRO and nothing offloaded (used by the whole-model state total and the loading peak)."""
    return replace(p, **_UNSHARDED, zero_stage=0.0, offload_optimizer=0.0, offload_params=0.0)


def loading_peak_bytes(p: MemoryInputs) -> FloatOrArray:
    """Device bytes at the worst moment of loading: 0 when loaded sharded (module docstring)."""
    loads_whole = np.asarray(p.full_model_load) > 0
    if np.ndim(loads_whole) == 0 and not loads_whole:  # the usual case: the plan search pays nothing
        return 0.0
    whole = whole_model(p)
    weights = stage_model_states(whole, 1.0, 1.0)["weights"]
    layer = layer_parameters(whole)
    one_layer = override_scale(whole) * (layer["weight_bytes"] + layer["expert_weight_bytes"])
    return np.where(loads_whole, weights + one_layer + overhead_bytes(p), 0.0)
