"""FSDP2 (`fully_shard`, ZeRO-3) over a fake process group: one rank's bytes of a sharded plan.

PyTorch's fake process group (`torch.testing._internal.distributed.fake_pg`, registered as backend "fake")
answers every collective at once without moving data, so one process can run rank 0 of an n-GPU job with
its real shard shapes: each transformer block and the root model are wrapped as torchtitan and torchtune
wrap them, parameters sharded over all GPUs, each block's weights gathered for its forward and backward and
freed after (`reshard_after_forward`). The forward and backward it traces are rank 0's. Its optimizer step
on fake sharded tensors is not faithful (the earlier trial found its figures wrong), so the optimizer phase of
a sharded plan comes from the formulas and the report says so.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn


def fake_group(world_size: int) -> None:
    """A fake process group of `world_size` ranks, this process rank 0 (one per process, replaced when the
    size changes)."""
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        if dist.get_world_size() == world_size:
            return
        dist.destroy_process_group()
    dist.init_process_group("fake", rank=0, world_size=world_size, store=FakeStore())


def shard(model: nn.Module, world_size: int) -> None:
    """`fully_shard` every transformer block, then the root (the embedding, final norm and head)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    fake_group(world_size)
    mesh = init_device_mesh("cpu", (world_size,))  # outside the fake mode: it reads real rank numbers
    blocks = [
        m for name, m in model.named_modules() if isinstance(m, nn.ModuleList) and name.endswith("layers")
    ]
    mode = _fake_mode(model)
    with mode:
        for layer in (layer for block in blocks for layer in block):
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)


def _fake_mode(model: nn.Module) -> torch._subclasses.fake_tensor.FakeTensorMode:
    fake = next(model.parameters())
    mode = getattr(fake, "fake_mode", None)
    assert mode is not None, "shard() runs on a model already on fake tensors (build.to_fake)"
    return mode
