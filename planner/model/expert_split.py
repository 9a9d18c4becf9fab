"""Which expert-parallel degrees a model allows: the rule the Scenario, resolve and the search share.

Megatron-Core places n_experts / ep whole routed experts on each expert-parallel rank, so ep must divide the
routed expert count (`--expert-model-parallel-size`, "num_moe_experts must be divisible by
expert_model_parallel_size"); a dense model has no experts to spread, so only ep = 1 means anything there.
The data-parallel side of the rule (ep divides dp) needs no shape and sits in the Scenario.
"""

from __future__ import annotations

from planner.errors import PlannerError
from planner.model.shape import ModelShape


def allowed_expert_degrees(n_experts: int, limit: int = 1024) -> list[int]:
    """Every ep up to `limit` that splits `n_experts` routed experts evenly (only 1 for a dense model)."""
    if n_experts <= 0:
        return [1]
    return [ep for ep in range(1, min(n_experts, limit) + 1) if n_experts % ep == 0]


def check_expert_degree(ep: int, dp: int, shape: ModelShape | None) -> None:
    """The Scenario's rule: Megatron-Core carves the expert-parallel group out of the data-parallel one
    (dp % ep == 0); with a shape at hand, also `check_expert_split`."""
    if ep == 1:
        return
    if dp % ep:
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
        check_expert_split(shape, ep, shape.name or "the model")


def check_expert_split(shape: ModelShape | None, ep: int, model: str) -> None:
    """Raise a PlannerError naming `ep` when the model's routed experts do not split into ep equal groups
    (`shape` None: a bare parameter count, which has no experts to spread)."""
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
    part of a token's FLOPs that runs as small per-expert matmuls (`planner.formulas.expert_compute`)."""
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
