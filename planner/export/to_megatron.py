"""The plan as Megatron-LM command-line arguments (core_v0.19.2, megatron/training/arguments.py).

The file holds one `--flag [value]` per line and nothing else (no comments, no `\\` continuations), so it can be
spliced into a launch line as it is: `torchrun ... pretrain_gpt.py $(cat megatron_args.txt) --data-path ...`;
the release, the install line and CUDA_DEVICE_MAX_CONNECTIONS are in the notes. `make test-exports` runs each
file through Megatron-LM's own `parse_args` and `validate_args` and builds its TransformerConfig
(framework_checks/megatron_lm_args.py).

Refused: MoE with tensor parallelism but without sequence parallelism (Megatron-LM's argument check stops it
at startup; megatron-core warns "sequence parallelism must be used").
"""

from __future__ import annotations

from planner.catalogue.catalog import Catalogs
from planner.errors import PlannerError
from planner.export.export_models import MEGATRON_POSITIONS, preset_of
from planner.export.export_types import (
    TARGET_VERSIONS,
    Export,
    Gaps,
    adapters,
    sequences,
    steps_note,
    written_for,
)
from planner.export.serialize import args_text
from planner.inputs.scenario import Scenario
from planner.model.layer_split import (
    check_layer_split,
    layers_per_virtual_stage,
    splits_with_embedding_and_loss,
    uneven_first_last,
)
from planner.model.shape import ModelShape
from planner.resolve import model_shape

TARGET = "megatron"
FILE_NAME = "megatron_args.txt"
Args = list[tuple[str, ...]]  # one flag with its values, e.g. ("--tensor-model-parallel-size", "4")


def export(s: Scenario, cats: Catalogs) -> Export:
    gaps = Gaps()
    shape = model_shape(s, cats)
    _refuse(s, shape)
    args: Args = [*_parallel(s), *_interleaving(s, shape, gaps), *_model(shape, s, gaps), *_batch(s)]
    args += _positions(s, shape, gaps)
    args += [*_recompute(s, gaps), *_precision(s, gaps), *_optimizer(s, gaps), *_sharding(s, gaps)]
    args += _kernels(s, gaps)
    _not_in_megatron(s, gaps)
    gaps.note(steps_note(s))
    gaps.note(
        "Add the data, tokenizer, learning-rate and checkpoint flags of your run (--data-path, --lr, ...)."
    )
    gaps.note(written_for(TARGET))
    connections = _connections_note(s)
    if connections:
        gaps.note(connections)
    return gaps.export(TARGET, args_text(args), FILE_NAME, [list(arg) for arg in args])


def _connections_note(s: Scenario) -> str | None:
    """What validate_args asserts about CUDA_DEVICE_MAX_CONNECTIONS (arguments.py at core_v0.19.2): Megatron FSDP
    stops when it is 1 (its overlap needs several hardware queues); otherwise tp or cp > 1 stops unless it is 1
    on GPUs before Blackwell (the overlapped collectives rely on one queue to keep their order)."""
    if s.zero_stage >= 2:  # written as Megatron FSDP (_sharding)
        return "Leave CUDA_DEVICE_MAX_CONNECTIONS unset (or above 1): Megatron FSDP stops at startup when it is 1."
    if s.tp > 1 or s.cp > 1:
        return (
            "Launch with CUDA_DEVICE_MAX_CONNECTIONS=1 set: with tensor or context parallelism Megatron stops "
            "at startup without it on GPUs before Blackwell."
        )
    return None


def _refuse(s: Scenario, shape: ModelShape | None) -> None:
    if shape is not None and shape.is_moe and s.tp > 1 and not s.sequence_parallel:
        raise PlannerError(
            "sequence_parallel",
            "Megatron-LM runs a mixture of experts with tensor parallelism only with sequence parallelism on",
            value=s.sequence_parallel,
            allowed="true when tp > 1 for a MoE model",
            related=("tp",),
        )


def _positions(s: Scenario, shape: ModelShape | None, gaps: Gaps) -> Args:
    """Rotary base, norm epsilon and Llama 3.x rope scaling of the model (export_models.MEGATRON_POSITIONS)."""
    if shape is None or shape.learned_pos_embeddings:
        return []
    found = MEGATRON_POSITIONS.get(preset_of(s.model, s.model_shape is not None) or "")
    if found is None:
        gaps.drop(
            "Rotary base and norm epsilon: not known for this model; Megatron uses 10000 and 1e-5 unless you add "
            "--rotary-base and --norm-epsilon from its config.json."
        )
        return []
    args: Args = [("--rotary-base", str(found.rotary_base)), ("--norm-epsilon", f"{found.norm_eps:g}")]
    if found.llama3_rope_factor is not None:
        args += [("--use-rope-scaling",), ("--rope-scaling-factor", f"{found.llama3_rope_factor:g}")]
    return args


def _parallel(s: Scenario) -> Args:
    args: Args = [
        ("--tensor-model-parallel-size", str(s.tp)),
        ("--pipeline-model-parallel-size", str(s.pp)),
        ("--context-parallel-size", str(s.cp)),
    ]
    if s.ep > 1:  # expert parallelism, carved out of the data-parallel group (Megatron-Core MoE)
        args.append(("--expert-model-parallel-size", str(s.ep)))
    if s.etp is not None:  # expert tensor parallelism; Megatron's default (no flag) is tp, as the planner's
        args.append(("--expert-tensor-parallel-size", str(s.etp)))
    if s.sequence_parallel:
        args.append(("--sequence-parallel",))
    return args


def _interleaving(s: Scenario, shape: ModelShape | None, gaps: Gaps) -> Args:
    """The interleaved 1F1B schedule: layers per model chunk, and the embedding/loss flags when the plan's
    split counts them as one layer each (`planner.model.layer_split`)."""
    if s.pp_virtual_stages == 1:
        return _uneven(s.pp, shape)
    if shape is None:
        gaps.drop(
            f"Interleaving ({s.pp_virtual_stages} virtual stages per GPU): without the model's layer count the "
            "file cannot give --num-layers-per-virtual-pipeline-stage; add it (layers / (pp x virtual stages))."
        )
        return []
    check_layer_split(shape.n_layers, s.pp, s.pp_virtual_stages, shape.name or s.model)
    per_chunk, counts_ends = layers_per_virtual_stage(shape.n_layers, s.pp, s.pp_virtual_stages)
    args: Args = [("--num-layers-per-virtual-pipeline-stage", str(per_chunk))]
    if counts_ends:
        args += [("--account-for-embedding-in-pipeline-split",), ("--account-for-loss-in-pipeline-split",)]
    return args


def _uneven(pp: int, shape: ModelShape | None) -> Args:
    """A plain pipeline whose layers do not split into pp equal stages, which validate_args asserts otherwise:
    the embedding and loss counted as layers when that evens it, else explicit first and last stages."""
    if shape is None or shape.n_layers % pp == 0:
        return []
    if splits_with_embedding_and_loss(shape.n_layers, pp, 1):
        return [("--account-for-embedding-in-pipeline-split",), ("--account-for-loss-in-pipeline-split",)]
    first, last = uneven_first_last(shape.n_layers, pp)
    args: Args = [("--decoder-first-pipeline-num-layers", str(first))]
    return [*args, ("--decoder-last-pipeline-num-layers", str(last))] if pp > 2 else args


def _model(shape: ModelShape | None, s: Scenario, gaps: Gaps) -> Args:
    if shape is None:
        gaps.drop(
            "Model architecture: the plan gives only a parameter count; add --num-layers, --hidden-size ..."
        )
        return [("--seq-length", str(s.seq_len))]
    args: Args = [
        ("--num-layers", str(shape.n_layers)),
        ("--hidden-size", str(shape.hidden_size)),
        ("--num-attention-heads", str(shape.n_heads)),
        ("--ffn-hidden-size", str(shape.ffn_hidden)),
    ]
    if shape.head_dim * shape.n_heads != shape.hidden_size:  # Megatron assumes hidden / heads otherwise
        args.append(("--kv-channels", str(shape.head_dim)))
    if shape.n_kv_heads < shape.n_heads:
        args += [("--group-query-attention",), ("--num-query-groups", str(shape.n_kv_heads))]
    args += [("--seq-length", str(s.seq_len)), ("--max-position-embeddings", str(shape.context_len))]
    return args + _layers(shape) + _experts(shape)


def _layers(shape: ModelShape) -> Args:
    args: Args = []
    if shape.learned_pos_embeddings:
        args.append(("--position-embedding-type", "learned_absolute"))
    else:
        args.append(("--position-embedding-type", "rope"))
    args.append(("--normalization", "RMSNorm" if shape.norm_kind == "rmsnorm" else "LayerNorm"))
    if shape.mlp_kind == "swiglu":
        args.append(("--swiglu",))
    if not shape.tied_embeddings:
        args.append(("--untie-embeddings-and-output-weights",))
    if not shape.attn_bias and not shape.mlp_bias:
        args.append(("--disable-bias-linear",))
    elif shape.attn_bias and not shape.mlp_bias:  # Qwen2's layout: biases on q, k, v only
        args += [("--disable-bias-linear",), ("--add-qkv-bias",)]
    return args


def _experts(shape: ModelShape) -> Args:
    if not shape.is_moe:
        return []
    args: Args = [
        ("--num-experts", str(shape.n_experts)),
        ("--moe-router-topk", str(shape.n_experts_active)),
        ("--moe-ffn-hidden-size", str(shape.moe_ffn_hidden or shape.ffn_hidden)),
    ]
    if shape.n_shared_experts:
        width = shape.n_shared_experts * (shape.moe_ffn_hidden or shape.ffn_hidden)
        args.append(("--moe-shared-expert-intermediate-size", str(width)))
    return args


def _batch(s: Scenario) -> Args:
    # Megatron derives accumulation as global / (micro x dp); the global batch carries the plan's grad_accum.
    return [
        ("--micro-batch-size", str(s.micro_batch)),
        ("--global-batch-size", str(s.sequences_per_step)),
        ("--train-samples", str(sequences(s))),
    ]


def _recompute(s: Scenario, gaps: Gaps) -> Args:
    if s.recompute == "full":
        # uniform over chunks of one layer: every layer's input is kept and the layer recomputed (full AC).
        return [
            ("--recompute-granularity", "full"),
            ("--recompute-method", "uniform"),
            ("--recompute-num-layers", "1"),
        ]
    if s.recompute == "selective":
        # Megatron's selective recompute defaults to --recompute-modules core_attn: Korthikanti et al.'s.
        return [("--recompute-granularity", "selective")]
    if s.recompute == "selective_op":
        gaps.drop(
            "Recompute selective_op: Megatron has no op-level selective checkpointing (torchtitan's); "
            "--recompute-granularity selective --recompute-modules ... recomputes whole submodules instead."
        )
    return []


def _precision(s: Scenario, gaps: Gaps) -> Args:
    if s.precision == "fp16_mixed":
        return [("--fp16",)]
    if s.precision == "fp8_mixed":
        # Transformer Engine FP8 inside a bf16 run: e4m3 forward, e5m2 gradients ("hybrid").
        return [("--bf16",), ("--fp8-format", "hybrid"), ("--fp8-recipe", "delayed")]
    if s.precision == "bf16_pure":
        gaps.drop(
            "Precision pure bf16: Megatron keeps fp32 main parameters under --bf16; the planned "
            "master-free memory is not reproduced."
        )
    return [] if s.precision == "fp32" else [("--bf16",)]


def _optimizer(s: Scenario, gaps: Gaps) -> Args:
    if s.optimizer == "adamw":
        return [("--optimizer", "adam")]  # Megatron's adam applies decoupled weight decay (AdamW)
    if s.optimizer in ("sgd", "sgd_momentum"):
        momentum = "0.9" if s.optimizer == "sgd_momentum" else "0.0"
        return [("--optimizer", "sgd"), ("--sgd-momentum", momentum)]
    gaps.drop(f"Optimizer {s.optimizer}: Megatron-LM offers only adam and sgd; no optimizer flag is written.")
    return []


def _sharding(s: Scenario, gaps: Gaps) -> Args:
    args: Args = []
    if s.zero_stage == 1:
        args.append(("--use-distributed-optimizer",))  # shards optimizer states over data parallel: ZeRO-1
    elif s.zero_stage >= 2:
        # Megatron FSDP, as docs/source/api-guide/custom_fsdp.md sets it up; it needs the fsdp_dtensor format.
        strategy = "optim_grads_params" if s.zero_stage == 3 else "optim_grads"
        args += [
            ("--use-megatron-fsdp",),
            ("--data-parallel-sharding-strategy", strategy),
            ("--no-gradient-accumulation-fusion",),
            ("--use-distributed-optimizer",),
            ("--ckpt-format", "fsdp_dtensor"),
        ]
    if s.offload_optimizer:
        # arguments.py asserts the precision-aware optimizer whenever the optimizer is offloaded.
        args += [("--optimizer-cpu-offload",), ("--use-precision-aware-optimizer",)]
    if s.hybrid_shard:
        gaps.drop(
            "Hybrid sharding: Megatron-LM shards over the whole data-parallel group; no in-node option."
        )
    return args


def _kernels(s: Scenario, gaps: Gaps) -> Args:
    args: Args = [("--attention-backend", "flash" if s.flash_attention else "unfused")]
    if s.fused_cross_entropy:
        args.append(("--cross-entropy-loss-fusion",))
    return args


def _not_in_megatron(s: Scenario, gaps: Gaps) -> None:
    if s.method != "full":
        gaps.drop(
            f"LoRA: Megatron-LM has no adapters (NeMo adds them); the plan's {adapters(s)} are not exported."
        )
    if s.offload_params:
        gaps.drop("Parameter offload: Megatron-LM's arguments offload only the optimizer.")
    if s.offload_activations:
        gaps.drop(f"Activation offload: not among {TARGET_VERSIONS[TARGET]}'s arguments.")
    if s.optimizer_in_backward:
        gaps.drop("Optimizer step in backward: Megatron-LM has no such option.")
