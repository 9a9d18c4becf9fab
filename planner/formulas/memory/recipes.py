"""Training recipes as numbers: bytes per parameter of each model-state component, and the choice enums.

The memory formulas (`planner.formulas.memory.peak`, `planner.formulas.memory.activations`) take numbers only, so that one call can evaluate
a single scenario or a million-row sweep. This module turns the categorical choices (method, optimizer,
precision, recompute mode) into those numbers before the formulas run.

Bytes per parameter, by component (ZeRO paper, Rajbhandari et al. 2020 §3.1, "K = 12" for mixed-precision
Adam; reference/peers.md §6):

| precision  | weights | grads | master | state element | activation element | note                            |
|------------|---------|-------|--------|---------------|--------------------|---------------------------------|
| bf16_mixed | 2       | 2     | 4      | 4 (fp32)      | 2                  | classic 2 + 2 + 4 + 8 = 16      |
| fp16_mixed | 2       | 2     | 4      | 4             | 2                  | loss scaling costs no memory    |
| fp8_mixed  | 2       | 2     | 4      | 4             | 2                  | FP8 is the matmul input format  |
| bf16_pure  | 2       | 2     | 0      | 2 (bf16)      | 2                  | no master; states in bf16       |
| fp32       | 4       | 4     | 0      | 4             | 4                  | the weights are the master      |

fp8_mixed: FP8 is the format the matmuls read (torchao float8 linears, Transformer Engine); the weights stay
16-bit with an fp32 master and the autograd-saved activations stay 16-bit (torchao's float8 linear saves the
high-precision input and re-casts it in backward), so its memory recipe equals bf16_mixed.

Optimizer states per trainable parameter, in units of the state element above:
- AdamW: first and second moment, 2 states (Loshchilov & Hutter 2019).
- 8-bit AdamW: 2 one-byte states plus one fp32 absmax per 2048-value block per state (Dettmers et al. 2022,
  "8-bit Optimizers via Block-wise Quantization", §2: block size 2048), independent of the precision.
  Paged 8-bit AdamW (bitsandbytes PagedAdamW8bit, HF `optim="paged_adamw_8bit"`) holds the same states in
  unified memory, which moves them to the host when the GPU runs short (`PAGED_OPTIMIZERS`).
- Paged 32-bit AdamW (bitsandbytes PagedAdamW / PagedAdamW32bit, HF `optim="paged_adamw_32bit"`, the QLoRA
  paper's paged optimizer): AdamW's two fp32 states (8 B per trainable parameter, whatever the precision: the
  bitsandbytes 32-bit optimizers keep fp32 states) in unified memory, paged like the 8-bit one.
- SGD: none. SGD with momentum: 1 state.
- Adafactor (Shazeer & Stern 2018, the HF default `beta1=None`): no first moment; the second moment of an
  r×c matrix is factored into r + c fp32 numbers, 4·(r + c)/(r·c) bytes per parameter. We charge the value for
  a 1024×1024 matrix, 8/1024 B/param, an upper bound for the matrices of any model at least 1024 wide.

LoRA and QLoRA (Hu et al. 2021; Dettmers et al. 2023): the adapters follow the recipe above; the frozen base
holds weights only, at its storage dtype: the recipe's weight bytes for LoRA, 4-bit NF4 for QLoRA's linear
layers (0.5 B/param + quantisation constants), while QLoRA keeps embeddings, norms and the output head 16-bit.
With PEFT (`peft_adapters`: the Hugging Face code path) the adapters are fp32 even in pure bf16:
`get_peft_model(..., autocast_adapter_dtype=True)`, the default, upcasts every fp16/bf16 adapter parameter to
fp32 (`BaseTuner._cast_adapter_dtype`, src/peft/tuners/tuners_utils.py at huggingface/peft 831fd03e), so their
weights and gradients take 4 B and torch's AdamW states, made like the parameter, 4 B each (`ADAPTER_BYTES`).
torchtune builds its LoRA modules under the training dtype (bf16 adapters), so the table stands there. Under
mixed precision the 16 B per adapter parameter are the same either way (4 + 4 + 0 + 8 for fp32 adapters under
autocast, 2 + 2 + 4 + 8 with a master copy).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final, Self

# --- numeric codes for categorical inputs ------------------------------------------------------------------
# The formulas take numbers only, so a choice travels as its enum code (stored as a float like every other
# column, compared with the members: `method != Method.FULL`). A member's name is the Scenario's value in
# capitals (`Method.of("qlora") is Method.QLORA`, `Method.QLORA.key == "qlora"`).


class _Choice(IntEnum):
    @classmethod
    def of(cls, name: str) -> Self:
        """The member for a Scenario value; ValueError naming the allowed values otherwise."""
        try:
            return cls[name.upper()]
        except KeyError:
            allowed = sorted(member.key for member in cls)
            raise ValueError(f"unknown {cls.__name__.lower()} {name!r}; allowed: {allowed}") from None

    @property
    def key(self) -> str:
        """The Scenario's value for this member."""
        return self.name.lower()


class Method(_Choice):
    """What is trained: every parameter, LoRA adapters on a 16-bit base, or adapters on a 4-bit NF4 base."""

    FULL = 0
    LORA = 1
    QLORA = 2


class Recompute(_Choice):
    """Activation recompute. SELECTIVE is Korthikanti et al.'s (recompute the attention core; equal to NONE
    under flash attention); SELECTIVE_OP is op-level selective checkpointing (torchtitan's default selective
    mode); see planner.formulas.memory.activations."""

    NONE = 0
    SELECTIVE = 1
    FULL = 2
    SELECTIVE_OP = 3


class PostTraining(_Choice):
    """The training objective (planner.inputs.post_training): supervised, preference or RL."""

    SFT = 0
    DPO = 1
    SIMPO = 2
    ORPO = 3
    KTO = 4
    REWARD_MODEL = 5
    PPO = 6
    GRPO = 7


# 2: a colocated rollout engine's phase (planner.formulas.post_training.side_models) is the larger one; 3: the whole model
# loaded onto each GPU before sharding (planner.formulas.memory.loading)
PEAK_PHASE_NAMES: Final = {
    0: "forward/backward",
    1: "optimizer step",
    2: "generation (rollouts)",
    3: "model loading (before sharding)",
}
PHASE_GENERATION: Final = 2.0
PHASE_LOADING: Final = 3.0
PP_STAGE_NAMES: Final = {0: "first pipeline stage", 1: "last pipeline stage"}

# --- element sizes ------------------------------------------------------------------------------------------
FP32_BYTES: Final = 4.0
BF16_BYTES: Final = 2.0
# PEFT's adapter dtype in pure 16-bit training (module docstring): fp32 weights, gradients and state elements
ADAPTER_BYTES: Final = FP32_BYTES

# precision -> (weights, grads, master, optimizer state element, activation element), bytes (table above)
_PRECISION_BYTES: Final = {
    "bf16_mixed": (2.0, 2.0, 4.0, 4.0, 2.0),
    "fp16_mixed": (2.0, 2.0, 4.0, 4.0, 2.0),
    "fp8_mixed": (2.0, 2.0, 4.0, 4.0, 2.0),
    "bf16_pure": (2.0, 2.0, 0.0, 2.0, 2.0),
    "fp32": (4.0, 4.0, 0.0, 4.0, 4.0),
}

# 8-bit AdamW: two 1-byte states + an fp32 absmax per 2048-value block for each (Dettmers et al. 2022 §2).
ADAMW_8BIT_BLOCK = 2048
ADAMW_8BIT_BYTES: Final = 2 * (1.0 + FP32_BYTES / ADAMW_8BIT_BLOCK)
# Adafactor: 4·(r + c)/(r·c) B/param for an r×c matrix, charged at r = c = 1024 (an upper bound, see above).
ADAFACTOR_BYTES: Final = FP32_BYTES * 2 / 1024

# optimizer -> states per parameter in the precision's state element (None: fixed bytes, see below)
_OPTIMIZER_STATES: Final = {
    "adamw": 2.0,
    "sgd": 0.0,
    "sgd_momentum": 1.0,
    "adamw_8bit": None,
    "paged_adamw_8bit": None,
    "paged_adamw": None,
    "adafactor": None,
}
_OPTIMIZER_FIXED_BYTES: Final = {
    "adamw_8bit": ADAMW_8BIT_BYTES,
    "paged_adamw_8bit": ADAMW_8BIT_BYTES,
    "paged_adamw": 2 * FP32_BYTES,  # two fp32 moments (bitsandbytes' 32-bit optimizer states)
    "adafactor": ADAFACTOR_BYTES,
}
# optimizers whose states live in CUDA unified memory and page to the host as VRAM runs short
PAGED_OPTIMIZERS: Final = frozenset({"paged_adamw_8bit", "paged_adamw"})

# QLoRA NF4 storage (Dettmers et al. 2023 §2, "Double Quantization"): 4 bits per weight plus the block
# constants. Plain: one fp32 absmax per 64 weights = 32/64 = 0.5 bit/param. Double quantisation: the absmax
# values are stored as 8 bits per 64-weight block plus one fp32 constant per 256 blocks
# = 8/64 + 32/(64·256) ≈ 0.127 bit/param.
NF4_BITS: Final = 4.0
NF4_BLOCK = 64
NF4_CONSTANT_BITS: Final = 32.0 / NF4_BLOCK
NF4_DOUBLE_QUANT_CONSTANT_BITS: Final = 8.0 / NF4_BLOCK + 32.0 / (NF4_BLOCK * 256)


def nf4_bytes_per_param(double_quant: bool) -> float:
    """Bytes per 4-bit NF4 weight including its quantisation constants (QLoRA paper §2, see above)."""
    constant_bits = NF4_DOUBLE_QUANT_CONSTANT_BITS if double_quant else NF4_CONSTANT_BITS
    return (NF4_BITS + constant_bits) / 8.0


def optimizer_bytes_per_param(optimizer: str, state_element_bytes: float) -> float:
    """Optimizer-state bytes per trainable parameter (sources in the module docstring)."""
    if optimizer not in _OPTIMIZER_STATES:
        raise ValueError(f"unknown optimizer {optimizer!r}; allowed: {sorted(_OPTIMIZER_STATES)}")
    n_states = _OPTIMIZER_STATES[optimizer]
    if n_states is None:
        return _OPTIMIZER_FIXED_BYTES[optimizer]
    return n_states * state_element_bytes


def recipe_bytes_per_param(
    method: str, optimizer: str, precision: str, qlora_double_quant: bool = True, peft_adapters: bool = False
) -> dict[str, float]:
    """Bytes per parameter of every model-state component for one recipe (table in the module docstring).

    Keys: `weights`, `grads`, `master`, `optimizer` (per trainable parameter: every parameter for full
    training, the adapters for LoRA/QLoRA); `frozen_weights` (per frozen linear-layer parameter of the base;
    0 for full training); `frozen_other_weights` (per frozen embedding, norm and head parameter: 16-bit under
    QLoRA, the storage dtype under LoRA); `activation_element` (bytes per saved activation element).
    `peft_adapters`: the adapters are PEFT's, fp32 whatever the precision (module docstring).
    """
    Method.of(method)  # ValueError naming the allowed methods
    if precision not in _PRECISION_BYTES:
        raise ValueError(f"unknown precision {precision!r}; allowed: {sorted(_PRECISION_BYTES)}")
    weights, grads, master, state_element, activation = _PRECISION_BYTES[precision]
    frozen_linear = {"full": 0.0, "lora": weights, "qlora": nf4_bytes_per_param(qlora_double_quant)}[method]
    frozen_other = {"full": 0.0, "lora": weights, "qlora": BF16_BYTES}[method]
    if peft_adapters and method != "full" and precision == "bf16_pure":  # PEFT upcasts them to fp32
        weights = grads = state_element = ADAPTER_BYTES
    return {
        "weights": weights,
        "grads": grads,
        "master": master,
        "optimizer": optimizer_bytes_per_param(optimizer, state_element),
        "frozen_weights": frozen_linear,
        "frozen_other_weights": frozen_other,
        "activation_element": activation,
    }


def model_state_bytes_per_param(method: str, optimizer: str, precision: str) -> float:
    """Weights + grads + master + optimizer per trainable parameter: 16 for mixed-precision AdamW (ZeRO §3.1)."""
    recipe = recipe_bytes_per_param(method, optimizer, precision)
    return recipe["weights"] + recipe["grads"] + recipe["master"] + recipe["optimizer"]
