"""What one imported log measured, and what it did not say.

Every figure is per GPU unless its name says total; memory is in GiB (2^30 bytes) and named by the statistic
the trainer reports (allocated, reserved, active), never merged into one "peak".
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The figures a log can carry, with the words the found/missing report uses for them.
FIGURES = {
    "step_time_s": "step time (s per optimizer step)",
    "tokens_per_s_per_gpu": "throughput (tokens/s per GPU)",
    "samples_per_s_total": "throughput (samples/s, all GPUs)",
    "tflops_per_gpu_model": "model TFLOP/s per GPU",
    "mfu_frac": "MFU",
    "peak_allocated_gib": "peak allocated memory (GiB)",
    "peak_reserved_gib": "peak reserved memory (GiB)",
    "peak_active_gib": "peak active memory (GiB)",
    "wall_clock_s": "wall clock (s)",
    "n_steps": "optimizer steps",
}


class RunLogError(ValueError):
    """A file that is not a log we can read, or one torn before any figure: one line saying what was seen."""


@dataclass
class RunRecord:
    """The figures read from one log file (None: the log did not state it) and where they came from."""

    path: str
    log_format: str
    figures: dict[str, float] = field(default_factory=dict)
    # configuration the log (or a config.json beside it) states: case-file column -> value
    config: dict[str, str] = field(default_factory=dict)
    n_lines: int = 0
    notes: list[str] = field(default_factory=list)

    def found(self) -> list[str]:
        return [FIGURES[key] for key in FIGURES if key in self.figures]

    def missing(self) -> list[str]:
        return [FIGURES[key] for key in FIGURES if key not in self.figures]

    def to_flat(self) -> dict[str, object]:
        flat: dict[str, object] = {"path": self.path, "log_format": self.log_format, "n_lines": self.n_lines}
        flat.update({key: self.figures.get(key) for key in FIGURES})
        flat["found"] = "; ".join(self.found())
        flat["missing"] = "; ".join(self.missing())
        flat["notes"] = "; ".join(self.notes)
        return flat
