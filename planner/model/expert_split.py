"""Which expert-parallel degrees a model allows: the rule the Scenario, resolve and the search share.

Megatron-Core places n_experts / ep whole routed experts on each expert-parallel rank, so ep must divide the
routed expert count (`--expert-model-parallel-size`, "num_moe_experts must be divisible by
expert_model_parallel_size"); a dense model has no experts to spread, so only ep = 1 means anything there.
The data-parallel side of the rule (ep divides dp) needs no shape and sits in the Scenario. With an expert
tensor-parallel degree etp (Megatron-Core's --expert-tensor-parallel-size; planner/inputs/moe_inputs.py) the
rule is etp x ep divides tp x dp, which at etp = tp is ep | dp again; each expert's matrices split over etp
ranks, so etp must also divide the expert width (megatron.core.utils.divide in its column-parallel linears).
"""

from __future__ import annotations

from planner.errors import PlannerError
from planner.model.shape import ModelShape


def allowed_expert_degrees(n_experts: int, limit: int = 1024) -> list[int]:
    """Every ep up to `limit` that splits `n_experts` routed experts evenly (only 1 for a dense model)."""
    if n_experts <= 0:
        return [1]
    return [ep for ep in range(1, min(n_experts, limit) + 1) if n_experts % ep == 0]


def check_expert_degree(
    ep: int, dp: int, shape: ModelShape | None, etp: int | None = None, tp: int = 1
) -> None:
    """The Scenario's rule: Megatron-Core carves the expert-parallel group out of the data-parallel one
    (dp % ep == 0; with an expert tensor degree, `check_expert_tensor_degree`); with a shape at hand, also
    `check_expert_split`."""
    if etp is not None and etp != tp:
        check_expert_tensor_degree(ep, etp, tp, dp)
    elif ep == 1:
        return
    elif dp % ep:
        divisors = ", ".join(str(d) for d in range(1, dp + 1) if dp % d == 0)
        raise PlannerError(
            "ep",
            f"must divide the data-parallel degree dp = n_gpus / (tp x pp x cp) = {dp}: expert parallelism is "
            "carved out of the data-parallel group",
            value=ep,
            allowed=f"at dp {dp}: {divisors}"[:200],
            related=("n_gpus", "tp", "pp", "cp"),
        )
    if shape is not None:
        check_expert_split(shape, ep, shape.name or "the model", etp if etp != tp else None)


def check_expert_tensor_degree(ep: int, etp: int, tp: int, dp: int) -> None:
    """etp x ep must divide tp x dp: the expert group is a sub-group of the tp x dp ranks that hold one
    pipeline stage and context slice (MoE Parallel Folding; module docstring). A PlannerError names `etp`
    with the degrees that fit at this ep, or `ep` when none does."""
    ranks = tp * dp
    if ranks % (etp * ep) == 0:
        return
    fitting = [d for d in range(1, ranks + 1) if ranks % (d * ep) == 0]
    if not fitting:
        raise PlannerError(
            "ep",
            f"must divide tp x dp = {ranks} (the expert group etp x ep lives inside those GPUs)",
            value=ep, allowed=", ".join(str(d) for d in range(1, ranks + 1) if ranks % d == 0)[:200],
            related=("etp", "tp", "n_gpus"),
        )  # fmt: skip
    raise PlannerError(
        "etp",
        f"etp x ep = {etp * ep} must divide tp x dp = {ranks}: the expert group (etp x ep GPUs) lives inside "
        "the tp x dp GPUs of one pipeline stage",
        value=etp,
        allowed=f"at ep {ep}, tp {tp}, dp {dp}: " + ", ".join(map(str, fitting)) + "; or empty to follow tp",
        related=("ep", "tp", "n_gpus"),
    )


def check_expert_split(shape: ModelShape | None, ep: int, model: str, etp: int | None = None) -> None:
    """Raise a PlannerError naming `ep` when the model's routed experts do not split into ep equal groups
    (`shape` None: a bare parameter count, which has no experts to spread), or naming `etp` when an expert
    tensor degree other than tp is given for a model without experts or does not divide the expert width."""
    if etp is not None:
        _check_expert_width(shape, etp, model)
    if ep == 1:
        return
    if shape is None:
        raise PlannerError(
            "ep", "needs a model with routed experts (a bare parameter count has none)", value=ep,
            allowed="1 without a model shape", related=("params_b", "model"),
        )  # fmt: skip
    if not shape.is_moe:
        raise PlannerError(
            "ep",
            f"{model} is a dense model (no routed experts): expert parallelism does not apply",
            value=ep,
            allowed="1 for a dense model",
            related=("model",),
        )
    if shape.n_experts % ep:
        allowed = ", ".join(str(d) for d in allowed_expert_degrees(shape.n_experts)[:12])
        raise PlannerError(
            "ep",
            f"must divide {model}'s {shape.n_experts} routed experts (each GPU holds n_experts / ep of them)",
            value=ep,
            allowed=allowed,
            related=("model",),
        )


def _check_expert_width(shape: ModelShape | None, etp: int, model: str) -> None:
    """etp splits each routed expert's width: it needs experts, and must divide their width."""
    if shape is None or not shape.is_moe:
        raise PlannerError(
            "etp",
            f"{'a bare parameter count' if shape is None else model} has no routed experts: expert tensor "
            "parallelism does not apply",
            value=etp, allowed="empty (follows tp) for a dense model", related=("model", "params_b"),
        )  # fmt: skip
    width = shape.moe_ffn_hidden or shape.ffn_hidden
    if width % etp:
        raise PlannerError(
            "etp", f"must divide {model}'s expert width {width} (each GPU holds width / etp of every expert)",
            value=etp, allowed=", ".join(str(d) for d in range(1, 1025) if width % d == 0)[:200],
            related=("model",),
        )  # fmt: skip


def _moe_layers(shape: ModelShape) -> int:
    """Layers with routed experts: all but the leading dense ones (DeepSeek-V3: 61 − 3 = 58)."""
    return shape.n_layers - shape.n_dense_layers if shape.is_moe else 0


def routed_expert_params(shape: ModelShape) -> int:
    """Weights of every routed expert in every MoE layer: what expert parallelism spreads over ep GPUs.

    Shared experts, the router, attention and dense layers are replicated on every expert-parallel rank
    (Megatron-Core MoE: only the routed experts' GroupedMLP is split over the EP group).
    """
    from planner.model.architecture import mlp_params

    n_matrices = 3 if shape.mlp_kind == "swiglu" else 2
    expert = mlp_params(
        shape.hidden_size, shape.moe_ffn_hidden or shape.ffn_hidden, n_matrices, int(shape.mlp_bias)
    )
    return _moe_layers(shape) * shape.n_experts * expert


def routed_active_matmul_params(shape: ModelShape) -> int:
    """Matmul weights (no biases) of the top-k routed experts one token runs through, all MoE layers: the
    part of a token's FLOPs that runs as small per-expert matmuls (`planner.formulas.step.expert_compute`)."""
    from planner.model.architecture import mlp_params

    n_matrices = 3 if shape.mlp_kind == "swiglu" else 2
    expert = mlp_params(shape.hidden_size, shape.moe_ffn_hidden or shape.ffn_hidden, n_matrices, 0)
    return _moe_layers(shape) * shape.n_experts_active * expert


def routed_expert_adapter_params(shape: ModelShape, rank: int, targets: str) -> int:
    """LoRA adapters on the routed experts (those `lora_adapter_params` counts when every linear is adapted):
    they live with their expert, so expert parallelism spreads them too."""
    if targets != "all_linear" or not shape.is_moe:
        return 0
    from planner.model.architecture import lora_mlp_dims

    n_matrices = 3 if shape.mlp_kind == "swiglu" else 2
    dims = lora_mlp_dims(shape.hidden_size, shape.moe_ffn_hidden or shape.ffn_hidden, n_matrices)
    return rank * _moe_layers(shape) * shape.n_experts * dims
