"""`planner estimate`'s table: a short summary grouped as a person asks (time, memory, cost, energy), in rounded
units with the unit written out. `--all` prints every figure under its unit-suffixed key instead, as JSON does.
"""

from __future__ import annotations

from planner.decide.bound_by import bound_by
from planner.decide.plan_words import checkpoint_words, human_duration, plan_warnings, plural, significant
from planner.resolve import Resolved
from planner.results import Estimate

_METHODS = {"full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA"}


def _gib(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f} GiB"


def _usd(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"${value:,.2f}" if value < 100 else f"${value:,.0f}"


def _tokens(value: float) -> str:
    for size, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:,.1f} {unit}"
    return f"{value:,.0f}"


def _fit_line(est: Estimate) -> str:
    if est.fits_vram is None or est.peak_gib_per_device is None:
        return f"{_gib(est.model_state_gib_per_device)} of model state; the peak is not modelled"
    verdict = "fits" if est.fits_vram else "does NOT fit"
    free = f", {_gib(est.headroom_gib)} free" if est.fits_vram and est.headroom_gib is not None else ""
    return f"{_gib(est.peak_gib_per_device)} of {_gib(est.vram_gib)}: {verdict}{free} ({est.peak_phase})"


def _time_rows(resolved: Resolved, est: Estimate) -> list[tuple[str, str]]:
    n_gpus = resolved.scenario.n_gpus
    band = f"{human_duration(est.wall_clock_h_low)} to {human_duration(est.wall_clock_h_high)}"
    rows = [
        ("Wall clock", f"{human_duration(est.wall_clock_h)} (range {band})"),
        ("GPU-hours", f"{est.device_hours:,.1f} on {plural(n_gpus, 'GPU')}"),
        ("Checkpoints", checkpoint_words(est)),
        ("Throughput", f"{est.tokens_per_s:,.0f} tokens/s ({est.tokens_per_s / n_gpus:,.0f} per GPU)"),
        ("Step", f"{est.step_time_s:,.3g} s, {bound_by(est)}; MFU {est.mfu:.0%}"),
    ]
    if resolved.scenario.post_training in ("ppo", "grpo"):
        rows.append(
            (
                "Rollouts",
                f"{plural(round(est.n_rollouts), 'step')} of {plural(round(est.rollout_prompts), 'prompt')}, "
                f"{est.generation_frac:.0%} of the time generating",
            )
        )
    return rows


def _multimodal_rows(est: Estimate) -> list[tuple[str, str]]:
    """Images and the parts beside the main transformer, for a vision-language or diffusion plan."""
    parts = (
        ("Vision encoder", est.vision_encoder_gib),
        ("Text encoders", est.text_encoders_gib),
        ("VAE", est.vae_gib),
    )
    rows = [(label, f"{_gib(gib)} per GPU") for label, gib in parts if gib]
    rows.append(("Image tokens per example", f"{est.image_tokens_per_example or 0:,.0f} ({est.token_rule})"))
    if est.images_per_s is not None:
        rows.append(("Images per second", f"{significant(est.images_per_s)} on all GPUs"))
    if est.epoch_wall_clock_h is not None:
        rows.append(("Per epoch", f"{human_duration(est.epoch_wall_clock_h)}, {_usd(est.epoch_cost_usd)}"))
    return rows


def summary(resolved: Resolved, est: Estimate) -> str:
    """The grouped summary of one plan, with its warnings last."""
    s = resolved.scenario
    head = (
        f"{resolved.model_label} on {plural(s.n_gpus, 'GPU')} ({est.gpu}), {_METHODS.get(s.method, s.method)}"
        f"{'' if s.post_training == 'sft' else ', ' + s.post_training.upper()}: "
        f"{_tokens(est.training_tokens)} training tokens"
    )
    groups = {
        "Time": _time_rows(resolved, est),
        "Memory per GPU (GiB = 2^30 bytes)": [
            ("Peak", _fit_line(est)),
            ("Model state", f"{_gib(est.model_state_gib_per_device)} (weights, gradients, optimizer)"),
        ],
        "Cost": [
            ("Cost", f"{_usd(est.cost_usd)} (range {_usd(est.cost_usd_low)} to {_usd(est.cost_usd_high)})"),
            ("Price", est.price_basis),
        ],
        "Energy": [("Energy", f"{significant(est.energy_kwh)} kWh, {significant(est.co2e_kg)} kg CO2e")],
    }
    if est.token_rule:
        groups["Images"] = _multimodal_rows(est)
    if est.fits_vram is False:  # the time and cost of a run that would stop at its first step
        groups["Time"][0] = ("Wall clock", f"{groups['Time'][0][1]}, if it fit")
        groups["Cost"][0] = ("Cost", f"{groups['Cost'][0][1]}, if it fit")
    lines = [head]
    for title, rows in groups.items():
        width = max(len(label) for label, _ in rows)
        lines += ["", title, *(f"  {label:<{width}}  {text}" for label, text in rows)]
    warnings = plan_warnings(resolved, est)
    if warnings:
        lines += ["", "Warnings", *(f"  ! {w.message}" for w in warnings)]
    lines += ["", "Every figure, with its unit in its name: --all (or --format json)."]
    return "\n".join(lines)
