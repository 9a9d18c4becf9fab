"""The scenario: every input of one plan, validated, frozen.

Optional figures (`None`) are derived from the catalogues or the component model; a value given here overrides
the derived one, which is how the seed's quick inputs keep working beside the detailed model.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from planner.errors import PlannerError, check_name
from planner.inputs import comm_inputs as ci
from planner.inputs import goodput_defaults as gp
from planner.inputs import host_inputs as hi
from planner.inputs import loading_inputs as ld
from planner.inputs import memory_tail_inputs as mt
from planner.inputs import moe_inputs as moe
from planner.inputs import multimodal_inputs as mm
from planner.inputs import post_training as pt
from planner.model.expert_split import check_expert_degree
from planner.model.layer_split import check_interleaving
from planner.model.shape import ModelShape

Method = Literal["full", "lora", "qlora"]
Optimizer = Literal["adamw", "adamw_8bit", "paged_adamw_8bit", "paged_adamw", "sgd", "sgd_momentum", "adafactor"]  # fmt: skip
Precision = Literal["bf16_mixed", "fp16_mixed", "bf16_pure", "fp8_mixed", "fp32"]
# "selective" is Korthikanti et al.'s attention-score recompute (a no-op once flash attention keeps no scores);
# "selective_op" is op-level selective checkpointing as torchtitan applies it by default.
Recompute = Literal["none", "selective", "selective_op", "full"]
LoraTargets = Literal["attention", "all_linear"]
Pricing = Literal["on_demand", "spot", "commit_1y", "commit_3y"]
EfficiencyBand = Literal["low", "typical", "high"]

# FSDP sharding strategies are the ZeRO stages under other names (PyTorch FSDP docs, ShardingStrategy).
FSDP_TO_ZERO: dict[str, tuple[int, bool]] = {
    "NO_SHARD": (0, False),
    "SHARD_GRAD_OP": (2, False),
    "FULL_SHARD": (3, False),
    "HYBRID_SHARD": (3, True),
}

# 1e16 tokens: hundreds of times the largest published runs (Llama 3: over 15e12 tokens); more is a typo.
MAX_TRAINING_TOKENS = 1e16

CUSTOM_MODEL = ""  # `model` left empty: the plan uses the bare `params_b` count (or an imported shape)


class Scenario(BaseModel):
    """All inputs of one training-run plan. Results live in `planner.estimate.Estimate`.

    Lower bounds are set where a smaller value would be meaningless and would overflow the arithmetic (a GPU
    slower than 1 GFLOP/s, MFU below 0.1 %, less than one token per example).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    # --- model -------------------------------------------------------------------------------------
    model: str = Field("Llama 3.1 8B", max_length=120, description="preset name; empty for a custom model")
    params_b: float | None = Field(None, ge=1e-6, le=100_000, description="bare parameter count, billions")
    model_shape: ModelShape | None = Field(None, description="an imported or edited shape")

    # --- data --------------------------------------------------------------------------------------
    examples: int = Field(30_000, ge=1, le=10**13, description="training examples")
    tokens_per_example: float = Field(1_000, ge=1, le=10**8, description="prompt + completion tokens")
    epochs: float = Field(3, ge=0.001, le=10_000)
    total_tokens_b: float | None = Field(
        None, ge=1e-6, le=10**6, description="overrides examples x tokens x epochs"
    )
    seq_len: int | None = Field(
        None,
        ge=16,
        le=2**21,
        description="training sequence length, tokens; empty = follows tokens per example",
    )
    packing: bool = Field(True, description="pack examples into full sequences (no padding)")

    # --- hardware ----------------------------------------------------------------------------------
    gpu: str = Field("H100 SXM", min_length=1, max_length=120)
    n_gpus: int = Field(8, ge=1, le=1_000_000)
    gpus_per_node: int = Field(8, ge=1, le=1024)
    peak_tflops: float | None = Field(
        None, ge=0.001, le=1_000_000, description="dense peak at training precision"
    )
    vram_gib: float | None = Field(None, ge=0.01, le=100_000)

    # --- compute -----------------------------------------------------------------------------------
    mfu: float | None = Field(None, ge=0.001, le=1, description="model FLOPs utilisation; empty = preset")
    efficiency_band: EfficiencyBand = "typical"
    flops_per_param_token: float | None = Field(None, gt=0, le=1000, description="overrides the FLOP model")
    inter_node_gb_per_s: float = Field(
        50.0, ge=0.001, le=100_000, description="network bandwidth per GPU, GB/s"
    )
    # 0.9: the overlap at which the published throughput rows are consistent (scripts/check_throughput_rows.py;
    # at 0.5 some measured runs would need more than 100 % of the dense peak).
    overlap_frac: float = Field(0.9, ge=0, le=1, description="share of communication hidden under compute")
    storage_gb_per_s: float | None = Field(
        None, ge=0.001, le=100_000, description="checkpoint storage read/write, GB/s; empty = I/O not counted"
    )
    n_checkpoints: int = Field(10, ge=0, le=1_000_000, description="checkpoints saved during the run")

    # --- memory ------------------------------------------------------------------------------------
    method: Method = "full"
    lora_rank: int = Field(16, ge=1, le=65_536)
    lora_targets: LoraTargets = "all_linear"
    qlora_double_quant: bool = True
    optimizer: Optimizer = "adamw"
    precision: Precision = "bf16_mixed"
    bytes_per_param: float | None = Field(None, gt=0, le=1000, description="overrides the component model")
    # FSDP FULL_SHARD is the usual multi-GPU fine-tuning layout (torchtune, HF accelerate FSDP recipes).
    zero_stage: int = Field(3, ge=0, le=3)
    hybrid_shard: bool = Field(False, description="shard within a node only (FSDP HYBRID_SHARD)")
    recompute: Recompute = "none"
    micro_batch: int = Field(1, ge=1, le=1_000_000)
    grad_accum: int = Field(1, ge=1, le=1_000_000)
    tp: int = Field(1, ge=1, le=1024, description="tensor-parallel degree")
    pp: int = Field(1, ge=1, le=1024, description="pipeline-parallel degree")
    cp: int = Field(1, ge=1, le=1024, description="context-parallel degree")
    sequence_parallel: bool = False
    flash_attention: bool = True
    fused_cross_entropy: bool = False
    offload_optimizer: bool = False
    offload_params: bool = False
    offload_activations: bool = Field(False, description="keep saved activations in CPU memory")
    optimizer_in_backward: bool = Field(False, description="step each parameter as its gradient arrives")
    dropout: bool = Field(
        False, description="dropout on (its masks are stored); fine-tuning usually runs without"
    )
    overhead_gib: float | None = Field(
        None, ge=0, le=1000, description="CUDA context, workspaces; empty = modelled"
    )
    fragmentation_frac: float = Field(0.10, ge=0, le=1, description="allocator slack over allocated bytes")

    # --- cost --------------------------------------------------------------------------------------
    usd_per_gpu_hour: float | None = Field(None, ge=0, le=100_000, description="your quote; overrides all")
    pricing: Pricing = "on_demand"
    snapshot: str = Field("", max_length=40, description="price snapshot date; empty = latest")
    experiments_multiplier: float = Field(1.0, ge=1, le=1000, description="search and failed runs")

    # --- energy ------------------------------------------------------------------------------------
    region: str = Field("us-east-1", min_length=1, max_length=80)
    pue: float = Field(1.2, ge=1, le=5)
    gpu_util_frac: float = Field(0.8, ge=0, le=1, description="how busy the GPU is (not MFU)")
    idle_power_frac: float = Field(0.3, ge=0, le=1, description="draw at idle, share of TDP")
    host_overhead_frac: float = Field(0.3, ge=0, le=10, description="CPU, memory, NIC, share of GPU power")
    usd_per_kwh: float = Field(0.12, ge=0, le=100, description="electricity price for on-premises runs")

    # --- pipeline schedule: 1 = plain 1F1B; v > 1 = interleaved 1F1B, v chunks of layers per GPU (Narayanan §2.2.2)
    # 128: no published run interleaves more finely (NeMo's Llama 2 70B recipe: 20), and layers / (pp·v) >= 1.
    pp_virtual_stages: int = Field(
        1, ge=1, le=128, description="virtual pipeline stages per GPU (interleaved 1F1B); 1 = plain 1F1B"
    )
    host_memory_gb_per_s: float = Field(
        **hi.FIELDS["host_memory_gb_per_s"]
    )  # offload's CPU step: host_inputs.py
    # --- goodput: failures, checkpoints, restarts (planner/formulas/step/goodput.py) ---------
    failures_per_gpu_hour: float = Field(**gp.FIELDS["failures_per_gpu_hour"])  # sources: goodput_defaults
    checkpoint_interval_min: float | None = Field(**gp.FIELDS["checkpoint_interval_min"])
    checkpoint_write_s: float | None = Field(**gp.FIELDS["checkpoint_write_s"])
    restart_min: float = Field(**gp.FIELDS["restart_min"])
    # --- memory tails (planner/formulas/memory/activations.py, model_states.py) -------------
    lora_dropout: bool = Field(**mt.FIELDS["lora_dropout"])  # sources: memory_tail_inputs
    fp32_grad_buffers: bool = Field(**mt.FIELDS["fp32_grad_buffers"])
    optimizer_foreach: bool = Field(**mt.FIELDS["optimizer_foreach"])
    fp8_weight_cache: bool = Field(**mt.FIELDS["fp8_weight_cache"])
    seq_len_spread_frac: float = Field(**mt.FIELDS["seq_len_spread_frac"])
    expandable_segments: bool = Field(**mt.FIELDS["expandable_segments"])
    hf_eager_code: bool = Field(**hi.FIELDS["hf_eager_code"])
    attention_kernel: hi.AttentionKernel = Field(**hi.FIELDS["attention_kernel"])
    # --- clocks and power caps (planner/formulas/energy/power_cap.py): 10 W-100 kW is a sanity bound
    # (the GPU catalogue's tdp_w ceiling); the range against the GPU's TDP needs the catalogue: planner.resolve.
    power_limit_w: float | None = Field(
        None, ge=10, le=100_000, description="power limit per GPU, W; empty = TDP"
    )
    # --- expert parallelism: routed experts over ep GPUs carved out of dp (Megatron-Core's
    # --expert-model-parallel-size; planner/formulas/step/moe.py); 1024 as for tp.
    ep: int = Field(1, ge=1, le=1024, description="expert-parallel degree (MoE only); 1 = none")
    # --- post-training: each field's range and reason in planner/inputs/post_training.py ---------
    post_training: pt.PostTraining = Field(**pt.FIELDS["post_training"])
    completion_tokens: int | None = Field(**pt.FIELDS["completion_tokens"])
    samples_per_prompt: int | None = Field(**pt.FIELDS["samples_per_prompt"])
    rollout_prompts: int | None = Field(**pt.FIELDS["rollout_prompts"])
    rollout_epochs: int = Field(**pt.FIELDS["rollout_epochs"])
    generation_gpus: int = Field(**pt.FIELDS["generation_gpus"])
    generation_tp: int = Field(**pt.FIELDS["generation_tp"])
    generation_memory_frac: float | None = Field(**pt.FIELDS["generation_memory_frac"])
    generation_sleeps: bool = Field(**pt.FIELDS["generation_sleeps"])
    generation_bandwidth_frac: float = Field(**pt.FIELDS["generation_bandwidth_frac"])
    generation_engine: pt.GenerationEngine = Field(**pt.FIELDS["generation_engine"])
    reference: pt.Reference = Field(**pt.FIELDS["reference"])
    frozen_dtype: pt.FrozenDtype = Field(**pt.FIELDS["frozen_dtype"])
    reward_model: str = Field(**pt.FIELDS["reward_model"])
    value_model: str = Field(**pt.FIELDS["value_model"])
    # --- MoE load, communication (item 6): reasons in moe_inputs.py, comm_inputs.py -----
    moe_capacity_factor: float = Field(**moe.FIELDS["moe_capacity_factor"])
    reduce_dtype: ci.ReduceDtype = Field(**ci.FIELDS["reduce_dtype"])
    overlap_model: ci.OverlapModel = Field(**ci.FIELDS["overlap_model"])
    tp_comm_overlap: bool = Field(**ci.FIELDS["tp_comm_overlap"])
    etp: int | None = Field(**moe.FIELDS["etp"])  # expert tensor parallelism
    model_loading: ld.ModelLoading = Field(**ld.FIELDS["model_loading"])  # loading_inputs.py
    images_per_example: float = Field(**mm.FIELDS["images_per_example"])  # reasons: multimodal_inputs.py
    image_size: mm.ImageSize = Field(**mm.FIELDS["image_size"])
    vision_encoder: mm.VisionEncoderMode = Field(**mm.FIELDS["vision_encoder"])
    train_projector: bool = Field(**mm.FIELDS["train_projector"])
    text_encoders: mm.SideModelMode = Field(**mm.FIELDS["text_encoders"])
    vae: mm.VaeMode = Field(**mm.FIELDS["vae"])
    lora_base_fp8: bool = Field(**mm.FIELDS["lora_base_fp8"])

    @model_validator(mode="before")
    @classmethod
    def _fsdp_names(cls, data: Any) -> Any:
        """Accept FSDP strategy names in `zero_stage` (e.g. "FULL_SHARD") and objectives in `method`."""
        data = pt.objective_in_method(data)
        if isinstance(data, dict) and isinstance(data.get("zero_stage"), str):
            name = data["zero_stage"].strip().upper()
            if name in FSDP_TO_ZERO:
                stage, hybrid = FSDP_TO_ZERO[name]
                data = {
                    **data,
                    "zero_stage": stage,
                    "hybrid_shard": hybrid or data.get("hybrid_shard", False),
                }
        return data

    @field_validator("checkpoint_interval_min", mode="before")
    @classmethod
    def _auto_interval(cls, value: Any) -> Any:
        """ "auto" (a CLI flag, a link, a CSV cell) means the Daly optimum, as an empty value does."""
        if isinstance(value, str) and value.strip().lower() in ("auto", ""):
            return None
        return value

    # Before the length checks: " " (a link's `gpu=%20`) must fail min_length, not pass it and become "", which
    # would leave a stored scenario that no later change validates against.
    @field_validator("gpu", "region", "model", "snapshot", "reward_model", "value_model", mode="before")
    @classmethod
    def _strip(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @field_validator("gpu", "region", "model", "reward_model", "value_model")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value)  # catalogue names: they travel in share links

    @model_validator(mode="after")
    def _layout(self) -> Scenario:
        if self.model == CUSTOM_MODEL and self.model_shape is None and self.params_b is None:
            raise PlannerError(
                "params_b",
                "give a parameter count or choose a model",
                allowed="> 0 billions",
                related=("model",),
            )
        model_parallel = self.tp * self.pp * self.cp
        if self.n_gpus % model_parallel:
            raise PlannerError(
                "n_gpus",
                f"must be a multiple of tp x pp x cp = {model_parallel}",
                value=self.n_gpus,
                related=("tp", "pp", "cp"),
            )
        check_interleaving(self.pp, self.grad_accum, self.pp_virtual_stages, self.model_shape)
        check_expert_degree(self.ep, self.dp, self.model_shape, self.etp, self.tp)  # catalogue shape: resolve
        pt.check_post_training(self)
        if self.training_tokens > MAX_TRAINING_TOKENS:
            raise PlannerError(
                "examples",
                "examples x tokens per example x epochs is too many tokens",
                value=f"{self.training_tokens:.3g} tokens",
                allowed=f"at most {MAX_TRAINING_TOKENS:.0e} tokens",
                related=("tokens_per_example", "epochs", "total_tokens_b"),
            )
        return self

    @property
    def dp(self) -> int:
        """Data-parallel degree: GPUs left after tensor, pipeline and context parallelism."""
        return self.n_gpus // (self.tp * self.pp * self.cp)

    @property
    def sequences_per_step(self) -> int:
        """The global batch in sequences: micro-batch × accumulation × data-parallel replicas."""
        return self.micro_batch * self.grad_accum * self.dp

    @property
    def training_tokens(self) -> float:
        if self.total_tokens_b is not None:
            return self.total_tokens_b * 1e9
        return self.examples * self.tokens_per_example * self.epochs

    def updated(self, **changes: Any) -> Scenario:
        """A validated copy with `changes` applied (model_copy(update=...) would skip validation)."""
        return Scenario.model_validate({**self.model_dump(), **changes})
