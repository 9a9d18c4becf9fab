"""How the model gets onto the GPUs before training (memory tails), kept here so the Scenario
stays short. The peak it drives lives in `planner.formulas.memory.loading`.

"sharded" (the default): each rank only ever holds its shard plus the unit being filled in, which is below the
training peak (training holds the same shard and gathered units and gradients, optimizer states and
activations on top), so loading never sets the peak. What the frameworks do:
- torchtitan builds the model on the meta device, applies `fully_shard`, then `to_empty` + `init_weights`
  materialise only the local DTensor shards, and the checkpoint is read with DCP into those shards
  (torchtitan/train.py at e9f53473bd120ca46cd5d34f15e7725287c35c66: `with torch.device("meta")`,
  `model.to_empty(device=init_device)`, `checkpointer.load`); torchtune's distributed recipes do the same
  ("To minimize GPU peak memory, we initialize the model on meta device", then `training.shard_model` and the
  full state dict loaded into the shards: recipes/full_finetune_distributed.py `_setup_model` at
  1bf50ae24f99d453a40380d6f272f024a3122048);
- DeepSpeed ZeRO-3 partitions each parameter as it is created under `deepspeed.zero.Init`
  (deepspeed/runtime/zero/partition_parameters.py at c4ec23fc40553a1184fac7e23ffea325d1f23c9f), which
  transformers' `from_pretrained` enters when ZeRO-3 is configured;
- accelerate's `fsdp_cpu_ram_efficient_loading`: rank 0 reads the checkpoint into CPU memory, the other ranks
  build the model on the meta device, and FSDP's `sync_module_states` broadcasts unit by unit as it wraps
  (accelerate src/accelerate/utils/fsdp_utils.py at 1cb6fdcf7be5f118d27f177bbbf7053923e41c3e,
  `load_fsdp_model`: ranks other than 0 return and rely on `sync_module_states`);
- FSDP1 given a CPU model and `device_id`: each unit is moved to the GPU as it is wrapped, then flattened and
  sharded (`_move_module_to_device` in torch/distributed/fsdp/_init_utils.py at
  39ec502db40696605fd91001e5a0afa23ed62f20), so the GPU holds the finished shards and one whole unit.

"full_on_gpu": the whole model is on every GPU at its load dtype before it is sharded: `model.cuda()` or
`.to(device)` before `FullyShardedDataParallel(...)`, or `from_pretrained(..., device_map="cuda")` then FSDP
(FSDP1 then shards "on the module's current device", `_get_compute_device` in the same _init_utils.py). A 70B
model in bf16 is 141 GB on each GPU, so it cannot start on 80 GB GPUs although its sharded training fits.
Without any sharding the weights are on the GPU anyway, so the choice changes nothing there.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

ModelLoading = Literal["sharded", "full_on_gpu"]
MODEL_LOADINGS: tuple[str, ...] = get_args(ModelLoading)

FIELDS: dict[str, dict[str, Any]] = {
    "model_loading": {
        "default": "sharded",
        "description": "how the model reaches the GPUs: sharded as it loads, or whole on each GPU first",
    },
}
