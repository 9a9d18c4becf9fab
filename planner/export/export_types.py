"""The export's result type and the plan figures every target needs (batch sizes, shard degrees, steps)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from planner.inputs.scenario import Scenario
from planner.model.labels import single_line

# The release each exporter writes for; `make test-exports` loads every file with that release (framework_checks/).
TARGET_VERSIONS: dict[str, str] = {
    "deepspeed": "DeepSpeed v0.19.8",
    "accelerate": "accelerate v1.15.0",
    "torchtune": "torchtune v0.6.1",
    "torchtitan": "torchtitan v0.3.0",
    "torchtitan-0.2": "torchtitan v0.2.2",
    "megatron": "Megatron-LM core_v0.19.2",
    "trl": "TRL v1.16.0",
}


@dataclass(frozen=True)
class Export:
    """One plan as one target's configuration file.

    `text` is the file's content; `not_expressed` says, one plain sentence each, what of the plan this target's
    configuration cannot say (so nothing is dropped silently); `notes` are what the user still has to supply or
    should know (paths, learning rate, a mapping that is close but not exact). `content` is the structure the
    text serialises (a dict, or the Megatron flags as lists of words): parsing `text` with the format's own
    parser gives back exactly this.
    """

    target: str
    text: str
    file_name: str
    not_expressed: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    content: Any = None


def sequences(s: Scenario) -> int:
    """Training sequences the plan runs: packed tokens over the sequence length, else one per example."""
    if s.packing or s.total_tokens_b is not None:
        if s.seq_len is None:  # export_plan writes the derived length in before any target reads it
            raise ValueError("the sequence length is not resolved yet")
        return max(1, math.ceil(s.training_tokens / s.seq_len))
    return max(1, math.ceil(s.examples * s.epochs))


def optimizer_steps(s: Scenario) -> int:
    return max(1, math.ceil(sequences(s) / s.sequences_per_step))


def in_node_shard(s: Scenario) -> int:
    """Data-parallel ranks that share one sharded copy when sharding stays inside a node (HYBRID_SHARD).

    The planner's rule (planner.formulas.memory.model_states.zero_shard_degree): the replicas that fit in one node
    beside the tensor, pipeline and context ranks; here the largest divisor of dp not above that, since the
    frameworks need dp = shard × replicate exactly.
    """
    room = max(1, s.gpus_per_node // (s.tp * s.pp * s.cp))
    return max(d for d in range(1, s.dp + 1) if s.dp % d == 0 and d <= room)


def n_nodes(s: Scenario) -> int:
    return math.ceil(s.n_gpus / s.gpus_per_node)


def plan_summary(s: Scenario) -> str:
    """One line naming the plan, for the comment heading a YAML or TOML file (the shape's name is free text:
    `single_line` keeps it on its line even where it bypassed the shape's validation)."""
    if s.model:
        model = s.model
    elif s.model_shape:  # an empty name is valid (white space folds away): the shape is still named
        model = single_line(s.model_shape.name, 120) or "an unnamed model shape"
    else:
        model = f"{s.params_b:g}B parameters"
    interleaved = f" x {s.pp_virtual_stages} virtual stages" if s.pp_virtual_stages > 1 else ""
    return (
        f"{model}, {s.method}, on {s.n_gpus} x {s.gpu}: tp {s.tp}, pp {s.pp}{interleaved}, cp {s.cp}, "
        f"dp {s.dp}; global batch {s.sequences_per_step} x {s.seq_len} tokens"
    )


# How to install the release a file is written for (the versions make test-exports loads it with; the
# versions in both tables are checked against framework_checks/requirements*.txt by tests/test_export_versions.py).
INSTALL: dict[str, str] = {
    "deepspeed": "pip install deepspeed==0.19.8",
    "accelerate": "pip install accelerate==1.15.0",
    "torchtune": "pip install torchtune==0.6.1 torchao==0.13.0 (bitsandbytes for 8-bit optimizers)",
    "torchtitan-0.2": "pip install torchtitan==0.2.2, then torchrun ... -m torchtitan.train --job.config_file FILE",
    "trl": "pip install trl==1.16.0 peft (bitsandbytes for QLoRA and 8-bit optimizers)",
    "torchtitan": "pip install torchtitan==0.3.0, then torchrun ... -m torchtitan.train $(cat FILE)",
    # the wheel (Python 3.12) ships megatron/training; pretrain_gpt.py is in the repository at the same tag
    "megatron": (
        "pip install megatron-core==0.19.2 (Python 3.12), and pretrain_gpt.py from "
        "github.com/NVIDIA/Megatron-LM at tag core_v0.19.2"
    ),
}


def written_for(target: str) -> str:
    """The sentence naming the release a file is for and its install line (a note where the format has no
    comments)."""
    return f"Written for {TARGET_VERSIONS[target]}. Install: {INSTALL[target]}."


def header(s: Scenario, target: str) -> list[str]:
    """The comment lines heading formats that allow them (YAML, TOML); planner.export.serialize writes them."""
    return [
        f"Written by Training Run Planner for {TARGET_VERSIONS[target]}.",
        f"Install: {INSTALL[target]}.",
        f"Plan: {plan_summary(s)}.",
    ]


@dataclass
class Gaps:
    """What an exporter could not write, and what the user must add, gathered while it builds the file."""

    not_expressed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def drop(self, sentence: str) -> None:
        self.not_expressed.append(sentence)

    def note(self, sentence: str) -> None:
        self.notes.append(sentence)

    def export(self, target: str, text: str, file_name: str, content: Any) -> Export:
        """The export; each sentence kept to one printable line, since the CLI prints them as `note:` lines."""
        return Export(
            target,
            text,
            file_name,
            tuple(single_line(sentence, 1000) for sentence in self.not_expressed),
            tuple(single_line(sentence, 1000) for sentence in self.notes),
            content,
        )


def adapters(s: Scenario) -> str:
    """The plan's adapters in words, for a sentence saying a target cannot train them."""
    where = "the attention projections" if s.lora_targets == "attention" else "every linear layer"
    base = " over a 4-bit NF4 base (QLoRA)" if s.method == "qlora" else ""
    return f"rank-{s.lora_rank} LoRA adapters on {where}{base}"


# A plan has no learning rate, but a file without one fails or trains at a library default nobody chose, so each
# file writes the rate torchtune's own Llama 3.1 8B recipes use for the method (recipes/configs/llama3_1/ at
# torchtune v0.6.1): full fine-tuning 8B_full.yaml, LoRA and QLoRA 8B_lora.yaml, LoRA DPO 8B_lora_dpo.yaml, full
# DPO 8B_full_dpo.yaml; GRPO is TRL's GRPOConfig default (trl/trainer/grpo_config.py, v1.16.0). A note says to
# tune it.
LEARNING_RATES: dict[tuple[str, str], float] = {
    ("sft", "full"): 2e-5,
    ("sft", "lora"): 3e-4,
    ("sft", "qlora"): 3e-4,
    ("dpo", "full"): 2e-5,
    ("dpo", "lora"): 5e-4,
    ("dpo", "qlora"): 5e-4,
}
RL_LEARNING_RATE = 1e-6


def learning_rate(s: Scenario) -> float:
    """The rate a file writes: the table's for the objective and method, other preference objectives as DPO,
    RL objectives TRL's GRPO default."""
    if s.post_training in ("ppo", "grpo"):
        return RL_LEARNING_RATE
    objective = "sft" if s.post_training == "sft" else "dpo"
    return LEARNING_RATES[(objective, s.method)]


def steps_note(s: Scenario) -> str:
    return (
        f"The plan is {sequences(s)} sequences of {s.seq_len} tokens, {optimizer_steps(s)} optimizer steps "
        f"of {s.sequences_per_step} sequences."
    )
