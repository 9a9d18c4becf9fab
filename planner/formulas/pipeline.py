"""Pipeline schedules: plain 1F1B and interleaved 1F1B with v virtual stages (model chunks) per GPU.

Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
§2.2: with p stages and m micro-batches per optimizer step, 1F1B idles (p−1)/m of the ideal time; giving each
GPU v chunks of layers (interleaving) divides that by v, at v times the point-to-point traffic (the bubble
itself is `planner.formulas.comm.pipeline_bubble_frac`, the traffic `planner.formulas.comm.pipeline_p2p_comm_s`).

What interleaving asks of a layout (Megatron-LM, the one framework the planner exports interleaving to):
- the layers split evenly into p·v chunks (`--num-layers-per-virtual-pipeline-stage` = layers / (p·v); Megatron
  asserts num_layers % p == 0 and (num_layers / p) % that flag == 0). With `--account-for-embedding-in-pipeline-split`
  and `--account-for-loss-in-pipeline-split` the embedding and the loss count as one layer each, which is how
  Llama 3 405B ran 126 layers on 16 stages (Dubey et al. 2024, §3.3.2: one layer fewer on the first and the last
  stage); so n_layers + 2 may be the count that divides instead;
- the micro-batches per step are a multiple of p (Megatron's interleaved schedule raises "number of microbatches
  is not divisible by pipeline-model-parallel-size when using interleaved schedule").
Every function takes floats or numpy arrays.
"""

from __future__ import annotations

import numpy as np

from planner.errors import PlannerError
from planner.formulas.activations import FloatOrArray, select

# The embedding and the loss, counted as one layer each when Megatron balances the stages with
# --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split.
EMBEDDING_AND_LOSS_LAYERS = 2


def splits_evenly(n_layers: FloatOrArray, pp: FloatOrArray, virtual_stages: FloatOrArray) -> FloatOrArray:
    """True where the transformer layers split into pp·v equal chunks."""
    return np.asarray(n_layers) % (np.asarray(pp) * virtual_stages) == 0


def splits_with_embedding_and_loss(n_layers: FloatOrArray, pp: FloatOrArray, virtual_stages: FloatOrArray):
    """True where the layers plus the embedding and the loss (one layer each) split into pp·v equal chunks."""
    return (np.asarray(n_layers) + EMBEDDING_AND_LOSS_LAYERS) % (np.asarray(pp) * virtual_stages) == 0


def interleaving_fits(n_layers: FloatOrArray, pp: FloatOrArray, virtual_stages: FloatOrArray):
    """True where v virtual stages per GPU can run: v = 1 always; v > 1 needs pp > 1 and an even split."""
    v = np.asarray(virtual_stages)
    even = splits_evenly(n_layers, pp, v) | splits_with_embedding_and_loss(n_layers, pp, v)
    return (v == 1) | ((np.asarray(pp) > 1) & even)


def layers_per_virtual_stage(n_layers: int, pp: int, virtual_stages: int) -> tuple[int, bool]:
    """Megatron's --num-layers-per-virtual-pipeline-stage, and whether it counts the embedding and the loss."""
    chunks = pp * virtual_stages
    if n_layers % chunks == 0:
        return n_layers // chunks, False
    return (n_layers + EMBEDDING_AND_LOSS_LAYERS) // chunks, True


def allowed_virtual_stages(n_layers: int, pp: int) -> list[int]:
    """Every v from 1 to n_layers that the layer split allows at this pipeline degree (for messages)."""
    return [v for v in range(1, n_layers + 1) if bool(interleaving_fits(n_layers, pp, v))]


def check_layer_split(n_layers: int, pp: int, virtual_stages: int, model: str) -> None:
    """Raise a PlannerError naming pp_virtual_stages when the model's layers do not split into pp·v chunks."""
    if virtual_stages == 1 or bool(interleaving_fits(n_layers, pp, virtual_stages)):
        return
    allowed = ", ".join(str(v) for v in allowed_virtual_stages(n_layers, pp)[:12])
    raise PlannerError(
        "pp_virtual_stages",
        f"{model}'s {n_layers} layers (or {n_layers} + {EMBEDDING_AND_LOSS_LAYERS} with the embedding and "
        f"the loss) do not split into pp x virtual stages = {pp} x {virtual_stages} = {pp * virtual_stages} "
        "equal chunks",
        value=virtual_stages,
        allowed=f"at pp {pp}: {allowed}",
        related=("pp", "model"),
    )


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
