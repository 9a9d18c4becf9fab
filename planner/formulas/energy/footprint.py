"""Energy, carbon and electricity cost of a run, from GPU-hours and the GPU's TDP.

Power model (design defaults, seed 002): a GPU draws 30 % of TDP when idle and rises linearly to TDP at full
load; the host (CPUs, memory, network) adds 30 % of the GPU's draw; the facility multiplies everything by the
PUE. reference/energy.md A1 compares this with the published conventions, A3 and C give the evidence. Every
numeric argument accepts a float or a numpy array and broadcasts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatOrArray = float | npt.NDArray[np.float64]

WH_PER_KWH = 1000.0
G_PER_KG = 1000.0

# Average GPU load, power-weighted. 0.8 puts the formula at 0.3 + 0.7 x 0.8 = 0.86 x TDP, which matches the
# "over 600 W" H100 (700 W TDP) average while training reported by Morrison et al. 2025 (ICLR), the one
# direct measurement of LLM training draw in reference/energy.md (A3, C.1). The same section recommends 0.8.
# Dodge et al. 2022 measured an A100 6B run at 70 % of TDP, which is u = 0.57, so 0.8 is on the high side for
# older GPUs.
DEFAULT_GPU_UTIL_FRAC = 0.8
# Draw at idle as a share of TDP (seed 002). A bare idle GPU draws 10-15 %; one holding a CUDA context or
# stalled on a checkpoint or on communication 15-25 % (energy.md A3, C.2), so 30 % is a conservative floor.
DEFAULT_IDLE_POWER_FRAC = 0.3
# Host power (CPUs, DRAM, NICs, fans) as a share of GPU power (seed 002). Evidence spans +10 % (Patterson
# 2021, GPT-3 V100 system power) to +59 % (BLOOM idle/infrastructure energy); energy.md C.4 calls 30 %
# middle-low.
DEFAULT_HOST_OVERHEAD_FRAC = 0.3
# Facility overhead (seed 002). Between hyperscale fleets (1.08-1.18) and colocation/enterprise sites
# (1.42-1.63).
DEFAULT_PUE = 1.2
# Published footprints (Meta's Llama cards, the LLaMA paper) multiply GPU-hours by TDP and PUE 1.1, with no
# idle floor and no host term (energy.md A1, B9); `model_card_energy_kwh` reproduces that convention.
MODEL_CARD_PUE = 1.1

GPU_UTIL_EXPLANATION = (
    "GPU load here means how hard the GPU works on average while the job runs, weighted by power: the "
    "share of time kernels are running, adjusted for how heavy they are. It is not MFU. A well-fed "
    "training job keeps its GPUs busy almost all the time even though it reaches only 30-50 % of peak "
    "FLOP/s, and it draws far more power than its MFU suggests. Entering the MFU here would understate "
    "energy by about a third. The default, 0.8, gives 86 % of TDP, close to the 600 W-plus that H100s (700 "
    "W TDP) averaged while training OLMo 2 (Morrison et al., 2025). 1.0 gives the TDP upper bound that "
    "Meta's model cards assume; A100 runs have been measured nearer 70 % of TDP, which is a load of about "
    "0.6."
)

PUE_EXPLANATION = (
    "PUE (power usage effectiveness) is the data centre's total power divided by the power reaching the IT "
    "equipment, so 1.2 means cooling, power conversion and lighting add 20 % on top of the servers. The "
    "large clouds report fleet averages of about 1.1: Google 1.09 (2024), AWS 1.15 (2024), Microsoft 1.17 "
    "(FY25), Meta 1.08 (2023). The industry average is much higher: 1.56 in the Uptime Institute's 2024 "
    "survey, and 1.63 for on-premises enterprise rooms (IDC, 2025); colocation sites sit near 1.4 (Equinix "
    "1.42, 2023). The default 1.2 is a cautious cloud figure. Use 1.0 to count only the IT power, as "
    "BLOOM's and some tools' figures do."
)


@dataclass(frozen=True)
class EnergyFigures:
    """Energy split by where it is drawn, its band from the wall-clock band, carbon and electricity cost."""

    gpu_power_w: FloatOrArray
    gpu_energy_kwh: FloatOrArray
    host_energy_kwh: FloatOrArray
    facility_overhead_kwh: FloatOrArray
    energy_kwh: FloatOrArray
    energy_kwh_low: FloatOrArray
    energy_kwh_high: FloatOrArray
    co2e_kg: FloatOrArray
    co2e_kg_low: FloatOrArray
    co2e_kg_high: FloatOrArray
    electricity_cost_usd: FloatOrArray


def gpu_power_w(
    tdp_w: FloatOrArray,
    gpu_util_frac: FloatOrArray = DEFAULT_GPU_UTIL_FRAC,
    idle_power_frac: FloatOrArray = DEFAULT_IDLE_POWER_FRAC,
) -> FloatOrArray:
    """Average GPU draw = TDP x (idle + (1 - idle) x load): a floor at idle, linear up to TDP (seed 002)."""
    return tdp_w * (idle_power_frac + (1.0 - idle_power_frac) * gpu_util_frac)


def energy_breakdown_kwh(
    gpu_hours: FloatOrArray,
    tdp_w: FloatOrArray,
    gpu_util_frac: FloatOrArray = DEFAULT_GPU_UTIL_FRAC,
    idle_power_frac: FloatOrArray = DEFAULT_IDLE_POWER_FRAC,
    host_overhead_frac: FloatOrArray = DEFAULT_HOST_OVERHEAD_FRAC,
    pue: FloatOrArray = DEFAULT_PUE,
) -> tuple[FloatOrArray, FloatOrArray, FloatOrArray, FloatOrArray]:
    """(GPU, host, facility overhead, total) kWh for the given GPU-hours.

    GPU = GPU-hours x draw; host = GPU x host share; facility = (GPU + host) x (PUE - 1), so the total is
    (GPU + host) x PUE, the form of Green Algorithms and Patterson et al. 2021 (energy.md A1, B1, B6).
    """
    gpu_kwh = gpu_hours * gpu_power_w(tdp_w, gpu_util_frac, idle_power_frac) / WH_PER_KWH
    host_kwh = gpu_kwh * host_overhead_frac
    facility_kwh = (gpu_kwh + host_kwh) * (pue - 1.0)
    return gpu_kwh, host_kwh, facility_kwh, gpu_kwh + host_kwh + facility_kwh


def model_card_energy_kwh(
    gpu_hours: FloatOrArray, power_w_per_gpu: FloatOrArray, pue: FloatOrArray = MODEL_CARD_PUE
) -> FloatOrArray:
    """Energy as published model cards compute it: GPU-hours x stated power x PUE, no idle floor, no host.

    The same breakdown at full load and no host share (energy.md B9: Meta's Llama cards; BLOOM with PUE 1.0).
    """
    return energy_breakdown_kwh(gpu_hours, power_w_per_gpu, 1.0, 0.0, 0.0, pue)[3]


def co2e_kg(energy_kwh: FloatOrArray, g_co2e_per_kwh: FloatOrArray) -> FloatOrArray:
    """Location-based emissions = energy x grid carbon intensity (energy.md A1; annual average, §D)."""
    return energy_kwh * g_co2e_per_kwh / G_PER_KG


def electricity_cost_usd(energy_kwh: FloatOrArray, usd_per_kwh: FloatOrArray) -> FloatOrArray:
    """Electricity bill of an on-premises run = facility energy x tariff (cloud prices already include it)."""
    return energy_kwh * usd_per_kwh


def energy_figures(
    n_gpus: FloatOrArray,
    wall_clock_h: FloatOrArray,
    tdp_w: FloatOrArray,
    g_co2e_per_kwh: FloatOrArray,
    *,
    gpu_util_frac: FloatOrArray = DEFAULT_GPU_UTIL_FRAC,
    idle_power_frac: FloatOrArray = DEFAULT_IDLE_POWER_FRAC,
    host_overhead_frac: FloatOrArray = DEFAULT_HOST_OVERHEAD_FRAC,
    pue: FloatOrArray = DEFAULT_PUE,
    usd_per_kwh: FloatOrArray,
    wall_clock_h_low: FloatOrArray | None = None,
    wall_clock_h_high: FloatOrArray | None = None,
    experiments_multiplier: FloatOrArray = 1.0,
) -> EnergyFigures:
    """All energy outputs of one plan (or one per row), each from `energy_breakdown_kwh`.

    GPU-hours = GPUs x wall clock x experiments multiplier (the extra runs draw power too). Energy is linear
    in hours, so the wall-clock band carries straight over to the energy and carbon bands.
    """
    gpus_times_runs = n_gpus * experiments_multiplier

    def breakdown(hours: FloatOrArray) -> tuple[FloatOrArray, FloatOrArray, FloatOrArray, FloatOrArray]:
        return energy_breakdown_kwh(
            gpus_times_runs * hours, tdp_w, gpu_util_frac, idle_power_frac, host_overhead_frac, pue
        )

    gpu_kwh, host_kwh, facility_kwh, total_kwh = breakdown(wall_clock_h)
    low_kwh = total_kwh if wall_clock_h_low is None else breakdown(wall_clock_h_low)[3]
    high_kwh = total_kwh if wall_clock_h_high is None else breakdown(wall_clock_h_high)[3]
    return EnergyFigures(
        gpu_power_w=gpu_power_w(tdp_w, gpu_util_frac, idle_power_frac),
        gpu_energy_kwh=gpu_kwh,
        host_energy_kwh=host_kwh,
        facility_overhead_kwh=facility_kwh,
        energy_kwh=total_kwh,
        energy_kwh_low=low_kwh,
        energy_kwh_high=high_kwh,
        co2e_kg=co2e_kg(total_kwh, g_co2e_per_kwh),
        co2e_kg_low=co2e_kg(low_kwh, g_co2e_per_kwh),
        co2e_kg_high=co2e_kg(high_kwh, g_co2e_per_kwh),
        electricity_cost_usd=electricity_cost_usd(total_kwh, usd_per_kwh),
    )
