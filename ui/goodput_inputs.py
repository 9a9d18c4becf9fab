"""The failures, checkpoints and restarts section of the Compute page: the goodput inputs and their answer."""

from __future__ import annotations

import streamlit as st

from planner import Estimate, checkpoint_words
from ui import format as fmt
from ui.number_entry import number_entry

OPEN_KEY = "goodput.open"  # the section's open state (Streamlit keeps it under this key)


def render_goodput_inputs() -> None:
    """Four boxes, drawn only while the section is open (a closed expander would still draw every widget)."""
    section = st.expander("Failures, checkpoints and restarts", key=OPEN_KEY, on_change="rerun")
    if not section.open:
        return
    with section:
        left, middle, right = st.columns(3)
        with left:
            number_entry(
                "Failures per GPU-hour",
                "failures_per_gpu_hour",
                help="Job-stopping failures per GPU per hour; 0 turns the figures with failures off. The default, "
                "3.39e-5, is Meta's RSC-1 cluster (Kokolis et al. 2025): 6.5 failures per 1,000 node-days.",
            )
            number_entry(
                "Restart (minutes)",
                "restart_min",
                help="From a failure until training runs again: notice, re-queue, start, initialise the "
                "collectives. The checkpoint reload is added from its size.",
            )
        with middle:
            number_entry(
                "Checkpoint interval (minutes of work)",
                "checkpoint_interval_min",
                placeholder="auto: Young/Daly optimum",
                help="Empty: Daly's optimum from the checkpoint write time and the job's mean time between "
                "failures, about √(2 × write time × MTBF).",
            )
        with right:
            number_entry(
                "Checkpoint write (seconds)",
                "checkpoint_write_s",
                placeholder="from its size and the storage bandwidth",
                help="Empty: weights and optimizer state ÷ the storage bandwidth above, or, when that is empty, "
                "2 GB/s per node up to 57 GB/s for the job (a parallel file system).",
            )


def goodput_rows(est: Estimate) -> list[tuple[str, str, str]]:
    """Breakdown rows: the run with failures next to the plain figures (empty when goodput is off)."""
    if est.goodput_frac == 0:  # failures outpace the run (the page's notes say by how much)
        return [("Wall clock with failures", f"job MTBF {fmt.hours(est.job_mtbf_h)}", "never finishes")]
    if not est.expected_failures:
        return []
    how = (
        f"{fmt.sig(est.expected_failures)} expected failures (job MTBF {fmt.hours(est.job_mtbf_h)}); "
        f"{checkpoint_words(est)}"
    )
    return [
        ("Wall clock with failures", how, fmt.hours(est.wall_clock_with_failures_h)),
        (
            "Of which redone work, restarts",
            "per failure: (interval + write) ÷ 2 redone; the restart and a reload",
            f"{fmt.hours(est.lost_work_h)}, {fmt.hours(est.restarts_h)}",
        ),
        (
            "GPU-hours with failures",
            "wall clock with failures × GPUs",
            fmt.count(est.gpu_hours_with_failures, 1),
        ),
        ("Cost with failures", "GPU-hours with failures × price", fmt.usd(est.cost_with_failures_usd)),
        (
            "Energy with failures",
            "redone work at the run's draw; writes and restarts at idle draw",
            f"{fmt.sig(est.energy_with_failures_kwh)} kWh",
        ),
        ("Goodput", "plain wall clock ÷ wall clock with failures", f"{(est.goodput_frac or 0):.1%}"),
    ]
