"""Pipeline schedules: plain 1F1B and interleaved 1F1B with v virtual stages (model chunks) per GPU.

Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
§2.2: with p stages and m micro-batches per optimizer step, 1F1B idles (p−1)/m of the ideal time; giving each
GPU v chunks of layers (interleaving) divides that by v, at v times the point-to-point traffic (the bubble
itself is `planner.formulas.step.comm.pipeline_bubble_frac`, the traffic `planner.formulas.step.comm.pipeline_p2p_comm_s`).

What interleaving asks of a layout (Megatron-LM, the one framework the planner exports interleaving to): the
layers split into p·v equal chunks (`planner.model.layer_split`, below the inputs so the Scenario can check it),
and the micro-batches per step are a multiple of p (Megatron's interleaved schedule raises "number of
microbatches is not divisible by pipeline-model-parallel-size when using interleaved schedule"; checked by the
Scenario). Every function takes floats or numpy arrays.
"""

from __future__ import annotations

import numpy as np

from planner.formulas.memory.activations import FloatOrArray
from planner.formulas.scalars import select


def layers_in_flight(
    n_layers: FloatOrArray,
    pp: FloatOrArray,
    virtual_stages: FloatOrArray,
    n_microbatches: FloatOrArray,
    first_stage: bool,
) -> FloatOrArray:
    """Layers' worth of one micro-batch's activations the first (rank 0) or last (rank p−1) stage holds at peak.

    Rank r runs its warm-up forwards, then one more in the steady state, before its first backward frees any:
    - 1F1B (v = 1): p−r−1 warm-up micro-batches, so min(m, p−r) micro-batches of n_layers/p layers: the first
      stage holds n_layers layers' worth (Narayanan et al. 2021 §2.2.1; Korthikanti et al. 2022 §4.2.3), the
      last one micro-batch;
    - interleaved (v > 1): 2·(p−r−1) + (v−1)·p warm-up chunk forwards (megatron/core/pipeline_parallel/
      schedules.py, forward_backward_pipelining_with_interleaving; the group size is p by default), each
      chunk n_layers/(p·v) layers; never more than the v·m chunk forwards of a step (m = p: all run first).
      Rank 0: (v·p + p − 1) chunks = n_layers·(1 + (p−1)/(p·v)), Korthikanti et al. 2022 §4.2.3's factor.
      Rank p−1: (v−1)·p + 1 chunks, so interleaving makes the last stage hold far more than one micro-batch.
    """
    v = np.asarray(virtual_stages)
    behind = pp - 1.0 if first_stage else 0.0  # stages after this one: p − r − 1
    plain = np.minimum(n_microbatches, behind + 1.0) * n_layers / pp
    chunks = np.minimum(2.0 * behind + (v - 1.0) * pp + 1.0, v * n_microbatches)
    interleaved = chunks * n_layers / (pp * v)
    return select(v > 1, interleaved, plain)


def data_parallel_rounds(pp: FloatOrArray, n_microbatches: FloatOrArray) -> tuple[FloatOrArray, FloatOrArray]:
    """(gradient reduce-scatters, ZeRO-3 weight gathers) per step of a sharded data-parallel layout: m and 2·m
    (a gather before each forward and each backward) without a pipeline, 1 and 1 with one.

    Under a pipeline each stage runs its micro-batches interleaved with the other stages, and the frameworks
    keep the stage's weights gathered and its gradients local until the last backward: torchtitan's FSDP2
    (`reshard_after_forward = not pp_enabled`, "to avoid per-microbatch all-gathers") with
    torch.distributed.pipelining (gradient sync only in the last backward, `backward_maybe_with_nosync`),
    which NeMo Automodel uses; Megatron-LM syncs its distributed optimizer once per step; DeepSpeed refuses
    ZeRO-2/3 with pipeline parallelism.
    """
    piped = np.asarray(pp) > 1
    return select(piped, 1.0, n_microbatches), select(piped, 1.0, 2.0 * np.asarray(n_microbatches))
