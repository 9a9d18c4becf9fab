"""Small real training runs on one GPU: Llama-style models built from a config with random weights (no
downloads), full fine-tuning and LoRA, timed step by step with the peaks of the caching allocator recorded.

    PYTHONUNBUFFERED=1 python bench/gpu_runs.py --out data/microbench/h200_runs.csv --budget-s 150

Precision: full fine-tuning keeps fp32 weights, gradients and AdamW states and runs forward and backward under
torch.autocast(bfloat16) — what the Hugging Face Trainer does with `bf16=True` — except the runs marked pure
bf16 (weights, gradients and states in bf16). LoRA: the base weights in bf16, PEFT's adapters in fp32 (its
default `autocast_adapter_dtype=True`), the same autocast. Optimizer: torch.optim.AdamW with its default
implementation (foreach on CUDA). Attention: attn_implementation="sdpa". Loss: the model's own, labels = inputs.
Without CUDA the same code runs a tiny model on the CPU (run_kind=cpu_tiny_smoke); those rows are never data.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from micro_common import MEASURED_DATE, Budget, RowWriter, machine_description, sync
from run_configs import RunConfig, extra_configs, run_configs

GIB = 2**30
COLUMNS = [
    "gpu_name", "model", "n_params", "trainable_params", "n_layers", "hidden", "n_heads", "n_kv_heads", "head_dim",
    "ffn_hidden", "vocab", "tied_embeddings", "attention_bias", "seq_len", "micro_batch", "method", "lora_rank",
    "lora_targets", "optimizer", "precision", "recompute", "attn_implementation", "n_warmup_steps",
    "n_timed_steps", "median_step_s", "min_step_s", "tokens_per_s", "peak_allocated_gib", "peak_reserved_gib",
    "device_used_peak_gib", "device_total_gib", "non_pytorch_gib", "fwd_peak_allocated_gib",
    "bwd_peak_allocated_gib", "optimizer_peak_allocated_gib", "status", "run_kind", "measured_on", "date",
]  # fmt: skip
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _on_gpu() -> bool:
    return torch.cuda.is_available()


def build_model(cfg: RunConfig) -> torch.nn.Module:
    """The Llama-style model of `cfg` with random weights on the device, trainable as the method says."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=cfg.vocab, hidden_size=cfg.hidden, intermediate_size=cfg.ffn_hidden,
        num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.n_kv_heads,
        head_dim=cfg.hidden // cfg.n_heads, tie_word_embeddings=cfg.tied_embeddings,
        attention_bias=cfg.attention_bias, max_position_embeddings=max(cfg.seq_len, 2048), use_cache=False,
        attn_implementation="sdpa",
    )  # fmt: skip
    with torch.device("cuda" if _on_gpu() else "cpu"):
        model = LlamaForCausalLM(config)
    if cfg.method == "lora" or cfg.precision == "pure_bf16":
        model = model.to(torch.bfloat16)
    if cfg.recompute:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if cfg.method == "lora":
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(r=cfg.lora_rank, lora_alpha=2 * cfg.lora_rank, lora_dropout=0.0,
                          target_modules=LORA_TARGETS, task_type="CAUSAL_LM")  # fmt: skip
        model = get_peft_model(model, lora)
    model.train()
    return model


def _peak_gib() -> tuple[float, float]:
    return torch.cuda.max_memory_allocated() / GIB, torch.cuda.max_memory_reserved() / GIB


def measure(cfg: RunConfig, n_warmup: int, n_timed: int) -> dict[str, Any]:
    """Build, train a few steps, and return the figures of one configuration."""
    model = build_model(cfg)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-5)
    device = "cuda" if _on_gpu() else "cpu"
    ids = torch.randint(0, cfg.vocab, (cfg.micro_batch, cfg.seq_len), device=device)

    def forward() -> torch.Tensor:
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            return model(input_ids=ids, labels=ids).loss

    def step() -> None:
        forward().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    if _on_gpu():
        torch.cuda.reset_peak_memory_stats()  # the run's peak from its first step on, as a training log reports
    times = []
    for i in range(n_warmup + n_timed):
        sync()
        t0 = time.perf_counter()
        step()
        sync()
        if i >= n_warmup:
            times.append(time.perf_counter() - t0)
    step_s = statistics.median(times)
    figures: dict[str, Any] = dict(
        n_params=sum(p.numel() for p in model.parameters()), trainable_params=sum(p.numel() for p in params),
        n_warmup_steps=n_warmup, n_timed_steps=n_timed, median_step_s=step_s, min_step_s=min(times),
        tokens_per_s=cfg.micro_batch * cfg.seq_len / step_s, status="ok",
    )  # fmt: skip
    if _on_gpu():
        figures.update(_memory_figures(forward, optimizer))
    return figures


def _memory_figures(forward: Any, optimizer: torch.optim.Optimizer) -> dict[str, float]:
    """The whole run's allocated and reserved peaks, the device total (reserved peak plus what the CUDA context,
    cuBLAS workspaces and other non-PyTorch allocations hold, read from cudaMemGetInfo), and one more step's
    allocated peak per phase (the peak counter reset and the device synchronized between phases)."""
    allocated_gib, reserved_gib = _peak_gib()
    free_b, total_b = torch.cuda.mem_get_info()
    non_pytorch_gib = (total_b - free_b - torch.cuda.memory_reserved()) / GIB
    phases = {}
    torch.cuda.reset_peak_memory_stats()
    loss = forward()
    sync()
    phases["fwd_peak_allocated_gib"] = torch.cuda.max_memory_allocated() / GIB
    torch.cuda.reset_peak_memory_stats()
    loss.backward()
    sync()
    phases["bwd_peak_allocated_gib"] = torch.cuda.max_memory_allocated() / GIB
    torch.cuda.reset_peak_memory_stats()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    sync()
    phases["optimizer_peak_allocated_gib"] = torch.cuda.max_memory_allocated() / GIB
    return dict(peak_allocated_gib=allocated_gib, peak_reserved_gib=reserved_gib,
                device_used_peak_gib=reserved_gib + non_pytorch_gib, device_total_gib=total_b / GIB,
                non_pytorch_gib=non_pytorch_gib, **phases)  # fmt: skip


def _config_cells(cfg: RunConfig) -> dict[str, Any]:
    return dict(
        model=cfg.model, n_layers=cfg.n_layers, hidden=cfg.hidden, n_heads=cfg.n_heads, n_kv_heads=cfg.n_kv_heads,
        head_dim=cfg.hidden // cfg.n_heads, ffn_hidden=cfg.ffn_hidden, vocab=cfg.vocab,
        tied_embeddings=cfg.tied_embeddings, attention_bias=cfg.attention_bias, seq_len=cfg.seq_len,
        micro_batch=cfg.micro_batch, method=cfg.method, lora_rank=cfg.lora_rank if cfg.method == "lora" else "",
        lora_targets="+".join(LORA_TARGETS) if cfg.method == "lora" else "", optimizer="AdamW (torch, foreach)",
        precision=cfg.precision_words, recompute="full (HF gradient checkpointing, non-reentrant)" if cfg.recompute
        else "none", attn_implementation="sdpa",
    )  # fmt: skip


def _release() -> None:
    gc.collect()
    if _on_gpu():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="CSV file to write")
    parser.add_argument("--budget-s", type=float, default=150.0, help="stop starting runs after this")
    parser.add_argument("--tiny", action="store_true", help="tiny model (always on without CUDA)")
    parser.add_argument("--extra", action="store_true", help="the second set (run_configs.extra_configs)")
    args = parser.parse_args(argv)
    tiny = args.tiny or not _on_gpu()
    gpu_name, measured_on = machine_description()
    import transformers

    try:
        import peft

        peft_part = f"; peft {peft.__version__}"
    except ImportError:
        peft_part = "; peft missing"
    fixed = {"gpu_name": gpu_name, "date": MEASURED_DATE, "run_kind": "cpu_tiny_smoke" if tiny else "gpu_full",
             "measured_on": f"{measured_on}; transformers {transformers.__version__}{peft_part}"}  # fmt: skip
    out = RowWriter(args.out, COLUMNS, fixed)
    budget = Budget(args.budget_s)
    for cfg in extra_configs() if args.extra and not tiny else run_configs(tiny):
        if budget.left_s() <= 0:
            print("budget spent; later configurations not run", flush=True)
            break
        t0 = time.perf_counter()
        try:
            figures = measure(cfg, n_warmup=1 if tiny else 2, n_timed=2 if tiny else 4)
        except torch.cuda.OutOfMemoryError:
            figures = {"status": "out of memory"}
        except Exception as exc:  # one configuration's failure must not stop the others
            traceback.print_exc()
            figures = {"status": f"failed: {exc!r}"[:200]}
        _release()
        out.write(**_config_cells(cfg), **figures)
        step = figures.get("median_step_s")
        print(f"{cfg.model} {cfg.method} mb{cfg.micro_batch} s{cfg.seq_len} rc{int(cfg.recompute)}: "
              f"{figures['status']} step {step if step is None else round(step, 4)} s, "
              f"{time.perf_counter() - t0:.1f} s wall", flush=True)  # fmt: skip
    out.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
