"""Dense tensor throughput of a GPU run under a power limit below its TDP.

A power limit (`nvidia-smi -pl`, or a variant shipped at a lower limit) is enforced by lowering the SM clock
until the board's draw stays under it; a compute-bound matmul then runs at a rate proportional to the clock.
The rule, written once here and read by `planner.resolve.gpu_columns` for every path:

    power(clock) = floor + (TDP - floor) x clock_frac ** POWER_CLOCK_EXPONENT,   floor = POWER_FLOOR_FRAC x TDP
    rate_frac    = clock_frac at power = limit
                 = ((limit - floor) / (TDP - floor)) ** (1 / POWER_CLOCK_EXPONENT),   1 at or above TDP

The floor is the draw that does not scale with the SM clock (leakage, HBM refresh, board); the exponent says
how fast the remainder grows with the clock (dynamic power ~ C x V^2 x f, with the voltage rising along
the V-f curve: 1 if the voltage stayed put, 3 if it rose in proportion).

Evidence and fit. Factryze's power-capping note (https://factryze.ai/scale-atlas/power/power-capping, read
2026-12) states that capping an H100 SXM (700 W) at 600 W "typically loses 10 to 15 % step throughput" on
transformer pre-training. With a floor of 15 % of TDP (a bare idle GPU draws 10-15 % of TDP:
reference/energy.md A3, C.2; the upper end) and exponent 1.5, 600 W gives
((600 - 105) / (700 - 105)) ** (1 / 1.5) = 0.832 ** 0.667 = 0.8846, i.e. 11.5 % slower: inside that band
(exponent 1 would give 16.8 %, exponent 3 6.0 %, both outside). The rule is a stated judgement fitted to one
published band, not a measured curve; it applies to the dense tensor rate only: memory-bound parts of a
step (the HBM clock is not lowered by the SM power limit) keep their datasheet bandwidth.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatOrArray = float | npt.NDArray[np.float64]

# Draw that does not scale with the SM clock, as a share of TDP: a bare idle GPU's 10-15 % (energy.md A3,
# C.2), the upper end. Below MIN_POWER_LIMIT_FRAC no limit is accepted, so the rule never reaches the floor.
POWER_FLOOR_FRAC = 0.15
# How power above the floor grows with the clock (see the module docstring for the fit).
POWER_CLOCK_EXPONENT = 1.5
# The lowest limit accepted, as a share of TDP: NVIDIA boards enforce a minimum limit, 200 W of 700 W on the
# H100 SXM (the lowest point of the 200-700 W sweep in Ujeniya et al. 2026, arXiv:2604.11391) and 100 W of
# 400 W on the A100 SXM4 (nvidia-smi's "Min Power Limit"); 0.25 admits both.
MIN_POWER_LIMIT_FRAC = 0.25


def capped_rate_frac(power_limit_w: FloatOrArray, tdp_w: FloatOrArray) -> FloatOrArray:
    """Dense tensor rate under `power_limit_w` as a share of the datasheet rate (at TDP): 1 at or above TDP.

    Never rises as the limit falls; callers keep the limit within [MIN_POWER_LIMIT_FRAC x TDP, TDP].
    """
    floor_w = POWER_FLOOR_FRAC * tdp_w
    share = np.clip((power_limit_w - floor_w) / (tdp_w - floor_w), 0.0, 1.0)
    frac = share ** (1.0 / POWER_CLOCK_EXPONENT)
    return float(frac) if np.ndim(frac) == 0 else frac
