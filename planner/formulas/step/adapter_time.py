"""The memory-bound time of LoRA and QLoRA that a FLOP count misses.

Two costs run at memory bandwidth, not at the tensor-core rate, so they are charged as bytes moved over the
GPU's memory bandwidth and added to the step's compute time:

* **Dequantising the 4-bit base (QLoRA).** Before each matmul with a frozen NF4 weight, bitsandbytes and
  torchao unpack it into a 16-bit copy (Dettmers et al. 2023, §3: "we dequantize the storage data type to the
  computation data type to perform the forward and backward pass"). That reads the NF4 weight with its block
  constants and writes the 16-bit copy; the matmul then reads the copy, as it reads any 16-bit weight, which
  the compute-only efficiency already holds. The forward and the backward pass (for the input gradient) each
  dequantise every weight once per micro-batch, and full recomputation repeats the forward.
* **The adapters' thin matmuls (LoRA and QLoRA).** A rank-r adapter beside a d_in × d_out weight does about
  r·(d_in + d_out) multiply-adds per token, far too few to hide its memory traffic: PEFT's unfused layer
  (`result + lora_B(lora_A(dropout(x))) * scaling`) reads its input, writes and re-reads its output for the
  sum in the forward pass, and in the backward pass reads the output gradient for B's weight gradient and for
  the input gradient, re-reads the input for A's weight gradient and writes the input gradient.
"""

from __future__ import annotations

from typing import Final

from planner.formulas.memory.recipes import BF16_BYTES
from planner.formulas.step.compute import Number, as_number

# Coalesced streaming kernels reach about 84 % of the datasheet HBM bandwidth (2.8 of 3.35 TB/s measured on an
# H100 SXM with Nsight Compute, mikamirai.com/blog/gpu-memory-bandwidth, 2026-03-28); 0.8 rounds it down for
# the short, launch-bound kernels of dequantisation and adapters.
STREAM_BANDWIDTH_FRAC: Final = 0.8
DEQUANT_PASSES_PER_MICRO_BATCH: Final = 2.0  # forward + backward; full recomputation adds a forward
# Per token and adapted matrix, in units of (d_in + d_out) elements, from PEFT's unfused layer (docstring):
# forward ≈ 1.5 (input read once, output written and read back: d_in + 2·d_out), backward ≈ 2 (output
# gradient read twice, input read and input gradient written: 2·d_in + 2·d_out).
ADAPTER_FORWARD_TOUCHES: Final = 1.5
ADAPTER_BACKWARD_TOUCHES: Final = 2.0


def dequant_bytes_per_weight(nf4_bytes_per_param: Number) -> Number:
    """Bytes one dequantisation moves per frozen weight: the NF4 value and its constants read, 16 bits written."""
    return as_number(nf4_bytes_per_param + BF16_BYTES)


def dequant_passes(full_recompute: Number) -> Number:
    """Times each frozen weight is dequantised per micro-batch: forward, backward, and the recomputed forward."""
    return as_number(DEQUANT_PASSES_PER_MICRO_BATCH + full_recompute)


def dequant_step_bytes(
    n_frozen_weights_per_gpu: Number,
    nf4_bytes_per_param: Number,
    full_recompute: Number,
    n_micro_batches: Number,
) -> Number:
    """Bytes one GPU moves per optimizer step dequantising the frozen 4-bit weights it holds."""
    per_pass = n_frozen_weights_per_gpu * dequant_bytes_per_weight(nf4_bytes_per_param)
    return as_number(per_pass * dequant_passes(full_recompute) * n_micro_batches)


def adapter_step_bytes(
    n_adapter_io_elements_per_gpu: Number,
    activation_bytes: Number,
    full_recompute: Number,
    tokens_per_gpu_step: Number,
) -> Number:
    """Bytes one GPU moves per optimizer step in the adapters' memory-bound matmuls.

    `n_adapter_io_elements_per_gpu`: Σ (d_in + d_out) over the adapted matrices the GPU holds (the adapter
    parameters over the rank); `tokens_per_gpu_step`: tokens the GPU's layers see per optimizer step.
    """
    touches = ADAPTER_FORWARD_TOUCHES * (1.0 + full_recompute) + ADAPTER_BACKWARD_TOUCHES
    return as_number(n_adapter_io_elements_per_gpu * touches * activation_bytes * tokens_per_gpu_step)


def memory_bound_time_s(step_bytes: Number, memory_bw_bytes_per_s: Number) -> Number:
    """Seconds to move `step_bytes` through GPU memory at the sustained streaming share of its bandwidth."""
    return as_number(step_bytes / (memory_bw_bytes_per_s * STREAM_BANDWIDTH_FRAC))
