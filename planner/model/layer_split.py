"""Whether a model's layers split into the chunks of an interleaved pipeline (Megatron-LM's rule).

Interleaved 1F1B gives each of the pp GPUs of a pipeline v chunks of layers. Megatron-LM asserts
num_layers % pp == 0 and (num_layers / pp) % --num-layers-per-virtual-pipeline-stage == 0, i.e. the layers
split into pp·v equal chunks (megatron/training/arguments.py). With --account-for-embedding-in-pipeline-split
and --account-for-loss-in-pipeline-split the embedding and the loss count as one layer each (the first and the
last stage then hold one transformer layer fewer, e.g. 126 layers on 16 stages of 8); so n_layers + 2 may be the count that divides instead. Here, below the inputs, so that the Scenario can
check an imported shape itself; the plan's other pipeline formulas are in `planner.formulas.step.pipeline`.
Every predicate takes ints, floats or numpy arrays (plain operators serve both, so the Scenario's check does not
import numpy: a refused input stays quick, tests/test_bounded_inputs.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planner.errors import PlannerError

if TYPE_CHECKING:
    from planner.model.shape import ModelShape

# The embedding and the loss, counted as one layer each when Megatron balances the stages with
# --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split.
EMBEDDING_AND_LOSS_LAYERS = 2


def splits_evenly(n_layers: Any, pp: Any, virtual_stages: Any) -> Any:
    """True where the transformer layers split into pp·v equal chunks."""
    return n_layers % (pp * virtual_stages) == 0


def splits_with_embedding_and_loss(n_layers: Any, pp: Any, virtual_stages: Any):
    """True where the layers plus the embedding and the loss (one layer each) split into pp·v equal chunks."""
    return (n_layers + EMBEDDING_AND_LOSS_LAYERS) % (pp * virtual_stages) == 0


def interleaving_fits(n_layers: Any, pp: Any, virtual_stages: Any):
    """True where v virtual stages per GPU can run: v = 1 always; v > 1 needs pp > 1 and an even split."""
    v = virtual_stages
    even = splits_evenly(n_layers, pp, v) | splits_with_embedding_and_loss(n_layers, pp, v)
    return (v == 1) | ((pp > 1) & even)


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


def check_interleaving(pp: int, grad_accum: int, v: int, shape: ModelShape | None) -> None:
    """Megatron's rules for the interleaved schedule, as the Scenario checks them: v = 1 without a pipeline,
    micro-batches a multiple of pp, and (when the shape is known) the layer split; a catalogue model's layer
    split is checked when the plan is resolved."""
    if v == 1:
        return
    if pp == 1:
        raise PlannerError(
            "pp_virtual_stages",
            "must be 1 without pipeline parallelism (pp 1): interleaving splits a pipeline stage",
            value=v,
            allowed="1 when pp is 1",
            related=("pp",),
        )
    if grad_accum % pp:
        raise PlannerError(
            "pp_virtual_stages",
            f"above 1 (interleaved 1F1B) needs the micro-batches per step, grad_accum {grad_accum}, "
            f"to be a multiple of pp = {pp} (Megatron's interleaved schedule)",
            value=v,
            allowed=f"1, or grad_accum a multiple of {pp}",
            related=("grad_accum", "pp"),
        )
    if shape is not None:
        check_layer_split(shape.n_layers, pp, v, shape.name or "the model")


def uneven_first_last(n_layers: int, pp: int) -> tuple[int, int]:
    """Layers on the first and the last stage when a plain pipeline's layers do not split into pp equal
    stages: the stages between hold ceil(n / pp) each (the planner's busiest stage, n / pp rounded up) and the
    two ends share the rest, the ends also holding the embedding and the loss. Megatron-LM takes these as
    --decoder-first/last-pipeline-num-layers and asserts the middle stages' layers divide evenly."""
    middle = -(-n_layers // pp)
    if n_layers - (pp - 2) * middle < 2:  # too few left for two ends: the middle stages hold n // pp
        middle = n_layers // pp
    ends = n_layers - (pp - 2) * middle
    return ends - ends // 2, ends // 2
