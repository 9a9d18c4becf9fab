"""What offloading costs each optimizer step: host transfers over PCIe and the optimizer step on the CPU.

Bytes are per GPU and per optimizer step; each GPU has its own x16 link to the host
(reference/hardware-and-prices.md §3.1), and `data/gpus.csv`'s `pcie_gb_per_s` is the theoretical rate **per
direction** (PCIe is full duplex), used at the measured 88 % (`planner.formulas.step.comm.PCIE_PRACTICAL_FRAC`:
nvbandwidth on 8× H200, 55.4 of 63 GB/s host→GPU).

- **Optimizer offload** (ZeRO-Offload, Ren et al. 2021 §4): after backward each GPU sends the gradients of its
  optimizer partition to the host, the CPU runs the update, and the updated low-precision weights come back.
  The gradient copy overlaps the last micro-batch's backward pass (the paper's §4.1 schedule: gradients are
  copied as backward produces them); the CPU step and the weights' return wait for it (the one-step delayed
  update that would hide them changes the optimisation, so it is not assumed).
- **CPU optimizer step**: a streaming update reads and writes every state it keeps (optimizer moments and the
  fp32 master copy), reads the gradient and writes the low-precision weights: AdamW in bf16 mixed precision
  moves 2·(8 + 4) + 2 + 2 = 28 bytes per parameter. The node's host memory serves every GPU of the node at
  once, so its bandwidth (`Scenario.host_memory_gb_per_s`, default and reason there) is shared by their
  partitions.
- **Parameter offload** (FSDP CPUOffload, DeepSpeed offload_param): the GPU's weight shard streams in for the
  forward and again for the backward of every micro-batch, and its gradients stream out; prefetching overlaps
  this with compute at the scenario's overlap share, as it does the ZeRO-3 gathers.
- **Activation offload**: the kept activations of every micro-batch go out during the forward pass and come
  back for the backward, on a side stream (torchtune's OffloadActivations), hidden the same way.
- **Paged optimizers** (bitsandbytes paged AdamW 8-bit): when the states do not fit they sit in host memory
  and are paged in for the update and out again: both directions, not hidden.

Offload traffic uses the PCIe copy engines, not the NVLink or network links the collectives use, so it hides
under compute independently of them (`planner.formulas.step.timing.run_time` adds the exposed part).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.formulas.step.comm import BYTES_PER_GB, effective_pcie_gb_per_s, exposed_comm_s
from planner.formulas.step.compute import Number, as_number

# Backward is two thirds of a step's compute (2 of the 6 FLOPs per parameter and token are the forward pass,
# Kaplan et al. 2020 §2.1); the last micro-batch's backward is what the optimizer's gradient copy hides under.
BACKWARD_SHARE_OF_COMPUTE = 2.0 / 3.0


def pcie_transfer_s(n_bytes: Number, pcie_gb_per_s: Number) -> Number:
    """Seconds to move `n_bytes` one way over one GPU's PCIe link: bytes / (theoretical GB/s × 0.88 × 1e9)."""
    return as_number(n_bytes / (effective_pcie_gb_per_s(pcie_gb_per_s) * BYTES_PER_GB))


def cpu_update_bytes_per_param(
    optimizer_bytes: Number, master_bytes: Number, grad_bytes: Number, weight_bytes: Number
) -> Number:
    """Host-memory bytes one parameter's update moves: read + write of its states, the gradient, the weights.

    With a master copy: 2·(optimizer + master) + gradient read + low-precision weight write (AdamW bf16
    mixed: 2·12 + 2 + 2 = 28 B). Without one the weights themselves are read and written: 2·(optimizer +
    weight) + gradient.
    """
    kept = np.where(master_bytes > 0, master_bytes, weight_bytes)
    written_copy = np.where(master_bytes > 0, weight_bytes, 0.0)
    return as_number(2.0 * (optimizer_bytes + kept) + grad_bytes + written_copy)


def cpu_optimizer_step_s(
    n_params_per_gpu: Number, gpus_on_host: Number, bytes_per_param: Number, host_memory_gb_per_s: Number
) -> Number:
    """Seconds of the CPU update: every GPU's partition on the node, through the node's memory bandwidth."""
    return as_number(
        n_params_per_gpu * gpus_on_host * bytes_per_param / (host_memory_gb_per_s * BYTES_PER_GB)
    )


@dataclass(frozen=True)
class OffloadStep:
    """Host transfer and CPU time of one optimizer step on one GPU, before any overlap (seconds)."""

    grad_out_s: Number  # optimizer partition's gradients to the host, hidden under the last backward
    serial_s: Number  # CPU update + updated weights back + paging: the step waits for all of it
    streamed_s: Number  # parameter and activation streaming over the micro-batches, hidden under compute
    n_micro_batches: Number

    @property
    def total_s(self) -> Number:
        return as_number(self.grad_out_s + self.serial_s + self.streamed_s)


NO_OFFLOAD = OffloadStep(0.0, 0.0, 0.0, 1.0)


def offload_step(
    *,
    host_optimizer_params: Number,
    host_weights_bytes: Number,
    host_grads_bytes: Number,
    host_activations_bytes: Number,
    paged_bytes: Number,
    activation_micro_batches_held: Number,
    n_micro_batches: Number,
    offload_params: Number,
    bytes_per_param: dict[str, Number],
    gpus_on_host: Number,
    pcie_gb_per_s: Number,
    host_memory_gb_per_s: Number,
) -> OffloadStep:
    """Per-step offload times of one GPU from what its memory model put on the host (module docstring).

    `host_optimizer_params` are the parameters whose update runs on the CPU (the GPU's optimizer partition);
    with parameter offload too, their gradients and weights already stream every micro-batch, so the
    optimizer's own copies are not counted again. `bytes_per_param` holds the recipe's "optimizer",
    "master", "grad" and "weight" bytes. Activations on the host are held for
    `activation_micro_batches_held` micro-batches at the peak, so one micro-batch moves that share of them.
    """
    b = bytes_per_param
    not_streamed = 1.0 - np.minimum(offload_params, 1.0)
    grad_out = pcie_transfer_s(host_optimizer_params * b["grad"] * not_streamed, pcie_gb_per_s)
    weights_back = pcie_transfer_s(host_optimizer_params * b["weight"] * not_streamed, pcie_gb_per_s)
    per_param = cpu_update_bytes_per_param(b["optimizer"], b["master"], b["grad"], b["weight"])
    cpu = cpu_optimizer_step_s(host_optimizer_params, gpus_on_host, per_param, host_memory_gb_per_s)
    paging = 2.0 * pcie_transfer_s(paged_bytes, pcie_gb_per_s)
    activations = host_activations_bytes / np.maximum(activation_micro_batches_held, 1.0)
    # Each direction has its own bandwidth: the busier one sets the streaming time.
    to_gpu = n_micro_batches * (2.0 * host_weights_bytes + activations)
    to_host = n_micro_batches * (host_grads_bytes + activations)
    streamed = pcie_transfer_s(np.maximum(to_gpu, to_host), pcie_gb_per_s)
    return OffloadStep(
        grad_out_s=grad_out,
        serial_s=as_number(cpu + weights_back + paging),
        streamed_s=streamed,
        n_micro_batches=n_micro_batches,
    )


def exposed_offload_s(step: OffloadStep, compute_s: Number, overlap_frac: Number) -> Number:
    """The part of the offload time the step pays: what its compute cannot hide, plus the serial part.

    `compute_s` is the compute still free to hide behind (what communication has not used). Streaming hides
    under it first, the optimizer's gradient copy under the last micro-batch's share of the backward of what
    is left; each at most `overlap_frac` of the compute it runs beside (`planner.formulas.step.comm.exposed_comm_s`,
    the same rule as communication), so no second of compute hides two transfers.
    """
    streamed = exposed_comm_s(step.streamed_s, compute_s, overlap_frac)
    left_s = compute_s - (step.streamed_s - streamed)
    last_backward_s = left_s * BACKWARD_SHARE_OF_COMPUTE / step.n_micro_batches
    grad_out = exposed_comm_s(step.grad_out_s, last_backward_s, overlap_frac)
    return as_number(grad_out + streamed + step.serial_s)
