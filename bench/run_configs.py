"""The configurations bench/gpu_runs.py trains, in priority order (a run cut by its time budget keeps the first).

Model shapes are those of data/models.csv (each model's Hugging Face config.json), whole for the small ones and
cut to a few layers for the large ones, so a few real steps fit in the time a lent GPU gives; Qwen2.5's query,
key and value biases are LlamaConfig's `attention_bias`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# name: (layers, hidden, heads, kv heads, MLP width, vocabulary, tied embeddings, attention bias)
SHAPES: dict[str, tuple[int, int, int, int, int, int, bool, bool]] = {
    "Llama 3.2 1B": (16, 2048, 32, 8, 8192, 128256, True, False),
    "Qwen2.5 0.5B": (24, 896, 14, 2, 4864, 151936, True, True),
    "Llama-style 0.13B (768 hidden, 12 layers, 32k vocabulary)": (12, 768, 12, 12, 2048, 32000, False, False),
    "Llama 3.1 8B cut to 4 layers": (4, 4096, 32, 8, 14336, 128256, False, False),
    "Llama 3.1 70B cut to 1 layer": (1, 8192, 64, 8, 28672, 128256, False, False),
    "Qwen2.5 7B cut to 4 layers": (4, 3584, 28, 4, 18944, 152064, False, True),
    "tiny CPU smoke model": (2, 64, 4, 2, 160, 256, False, False),
}
PRECISION_WORDS = {
    "mixed": "bf16 mixed (torch.autocast bf16, fp32 master weights, gradients and AdamW states)",
    "pure_bf16": "pure bf16 (weights, gradients and AdamW states in bf16)",
    "lora": "bf16 base weights (pure bf16), fp32 LoRA adapters (PEFT default), torch.autocast bf16",
}


@dataclass(frozen=True)
class RunConfig:
    model: str
    n_layers: int
    hidden: int
    n_heads: int
    n_kv_heads: int
    ffn_hidden: int
    vocab: int
    tied_embeddings: bool
    attention_bias: bool
    seq_len: int
    micro_batch: int
    method: str  # full or lora
    recompute: bool
    precision: str = "mixed"  # mixed or pure_bf16 (LoRA: always its own recipe)
    lora_rank: int = 16

    @property
    def precision_words(self) -> str:
        return PRECISION_WORDS["lora" if self.method == "lora" else self.precision]


def _cfg(
    model: str, method: str, micro_batch: int, seq_len: int, recompute: bool = False, **kw: object
) -> RunConfig:
    layers, hidden, heads, kv, ffn, vocab, tied, bias = SHAPES[model]
    base = RunConfig(
        model, layers, hidden, heads, kv, ffn, vocab, tied, bias, seq_len, micro_batch, method, recompute
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def run_configs(tiny: bool) -> list[RunConfig]:
    if tiny:
        return [
            _cfg("tiny CPU smoke model", "full", 2, 32),
            _cfg("tiny CPU smoke model", "lora", 2, 32, True),
        ]
    l1b, q05, s013 = (
        "Llama 3.2 1B",
        "Qwen2.5 0.5B",
        "Llama-style 0.13B (768 hidden, 12 layers, 32k vocabulary)",
    )
    l8, l70, q7 = "Llama 3.1 8B cut to 4 layers", "Llama 3.1 70B cut to 1 layer", "Qwen2.5 7B cut to 4 layers"
    return [
        _cfg(l1b, "full", 1, 2048), _cfg(l1b, "full", 4, 2048), _cfg(l1b, "lora", 4, 2048),
        _cfg(l1b, "full", 8, 2048, True), _cfg(l1b, "full", 2, 4096), _cfg(l1b, "lora", 8, 4096, True),
        _cfg(l8, "full", 1, 4096), _cfg(l8, "lora", 1, 4096), _cfg(l8, "full", 2, 4096, True),
        _cfg(l8, "lora", 4, 4096, True),
        _cfg(q05, "full", 4, 2048), _cfg(q05, "lora", 4, 2048), _cfg(q05, "full", 1, 4096),
        _cfg(s013, "full", 8, 1024), _cfg(s013, "full", 1, 1024), _cfg(s013, "full", 4, 2048, True),
        _cfg(l70, "full", 1, 4096), _cfg(l70, "lora", 2, 4096),
        _cfg(q7, "full", 2, 2048), _cfg(q7, "lora", 2, 2048),
        _cfg(l1b, "full", 1, 512), _cfg(l1b, "full", 4, 2048, precision="pure_bf16"), _cfg(l1b, "lora", 1, 512),
        _cfg(l1b, "full", 2, 2048, True), _cfg(l1b, "lora", 2, 1024), _cfg(l8, "full", 8, 512),
        _cfg(l8, "lora", 2, 2048), _cfg(q05, "lora", 8, 4096, True), _cfg(s013, "lora", 8, 2048),
        _cfg(l1b, "full", 4, 4096, True), _cfg(l1b, "lora", 4, 4096),
    ]  # fmt: skip


def extra_configs() -> list[RunConfig]:
    """A second set: longer sequences, larger micro-batches, pure bf16, a higher LoRA rank; then the first eight
    configurations of `run_configs` again, so two calls' figures for the same run give the run-to-run spread."""
    l1b, q05, s013 = (
        "Llama 3.2 1B",
        "Qwen2.5 0.5B",
        "Llama-style 0.13B (768 hidden, 12 layers, 32k vocabulary)",
    )
    l8, l70, q7 = "Llama 3.1 8B cut to 4 layers", "Llama 3.1 70B cut to 1 layer", "Qwen2.5 7B cut to 4 layers"
    extra = [
        _cfg(l1b, "full", 1, 8192, True), _cfg(l1b, "lora", 1, 8192), _cfg(l1b, "full", 16, 1024, True),
        _cfg(l1b, "lora", 16, 2048, True), _cfg(l1b, "full", 8, 2048, precision="pure_bf16"),
        _cfg(l1b, "full", 1, 2048, precision="pure_bf16"), _cfg(l1b, "lora", 4, 2048, lora_rank=64),
        _cfg(s013, "full", 16, 2048), _cfg(s013, "full", 32, 1024, True), _cfg(q05, "full", 8, 2048, True),
        _cfg(q05, "full", 4, 2048, precision="pure_bf16"), _cfg(l8, "full", 4, 2048, True),
        _cfg(l8, "lora", 8, 2048, True), _cfg(l8, "full", 1, 8192, True), _cfg(l70, "full", 1, 8192, True),
        _cfg(l70, "lora", 4, 4096, True), _cfg(q7, "full", 4, 4096, True), _cfg(q7, "lora", 8, 4096, True),
    ]  # fmt: skip
    return extra + run_configs(tiny=False)[:8]
