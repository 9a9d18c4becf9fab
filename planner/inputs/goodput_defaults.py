"""Defaults and ranges of the goodput inputs (failures, checkpoints, restarts) with their sources; `Scenario`
reads them (`Field(**FIELDS[name])`)."""

from typing import Any

# Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research Clusters" (FAIR at Meta, HPCA
# 2025, arXiv:2410.21680): 11 months of Meta's RSC-1 (16k A100, 8 per node) give a fitted rate of 6.50
# job-interrupting failures per 1,000 node-days; it reproduces the paper's projected job MTTF of 1.8 h at 16,384
# GPUs (2,048 nodes x 6.5e-3 a day = 13.3 failures a day). Per GPU-hour: 6.5e-3 / (8 x 24) = 3.39e-5, one failure
# per 29,500 GPU-hours. The paper measured 7.9 h at 1,024 GPUs (1.24e-4 per GPU-hour): small jobs fail more often
# than the hardware rate says, so this default is the optimistic end for them.
FAILURES_PER_NODE_DAY_RSC1 = 6.50e-3
FAILURES_PER_GPU_HOUR = FAILURES_PER_NODE_DAY_RSC1 / (8 * 24)
# Restart: 10 minutes to notice the failure, drain and re-queue the job, start the processes and initialise the
# collectives (the parts of Huawei MindCluster's recovery-time breakdown, "resumable training" guide, before the
# checkpoint reload, which the planner adds from the checkpoint's bytes). Not a published figure: an order of
# magnitude, and a scenario input.
RESTART_MIN = 10.0

FIELDS: dict[str, dict[str, Any]] = {
    # At most 0.01 per GPU-hour: one failure per 100 GPU-hours, some 80 times the worst published record
    # (Kokolis et al. 2025: 1.24e-4 at 1,024 GPUs); more is a typo for a per-node or per-day rate.
    "failures_per_gpu_hour": {
        "default": FAILURES_PER_GPU_HOUR,
        "ge": 0,
        "le": 0.01,
        "description": "job-stopping failures per GPU-hour; 0 = goodput off",
    },
    # 1 minute to 10,000 hours: below a minute the writes would be most of the run; above, no checkpoint at all.
    "checkpoint_interval_min": {
        "default": None,
        "ge": 1,
        "le": 600_000,
        "description": "work between checkpoints, minutes; empty or auto = Daly optimum",
    },
    "checkpoint_write_s": {
        "default": None,
        "ge": 0.01,
        "le": 1_000_000,
        "description": "seconds to write one checkpoint; empty = bytes / bandwidth",
    },
    "restart_min": {
        "default": RESTART_MIN,
        "ge": 0,
        "le": 100_000,
        "description": "minutes from a failure until training runs again",
    },
}
