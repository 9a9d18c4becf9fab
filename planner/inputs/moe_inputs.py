"""The mixture-of-experts inputs beyond the expert-parallel degree, kept here so the
Scenario stays short: each Field with its default, range and reason.

`moe_capacity_factor` is the busiest expert-parallel rank's routed load over the average. Switch Transformer
(Fedus et al. 2022, §2.1) defines expert capacity = tokens per batch / experts × capacity factor and pads every
expert's buffer to it (it trains at 1.0 and 1.25 and evaluates at 2.0); GShard (Lepikhin et al. 2020, §2.2)
uses 2. For a dropless router without padding (Megatron-Core's default, MegaBlocks) it is the load imbalance:
the busiest rank's tokens over the average.

Default 1.0, dropless with balanced routing: the auxiliary-loss and bias balancing of current MoE models aims
at it, and the published MoE benchmarks the planner is checked against run a balanced gate (NeMo Automodel's
"fake balanced gate"). Range 1 to 16: below 1 a padded router drops more tokens than it keeps room for (the
planner does not model dropped tokens); 16 is 8 times the largest published setting (GShard's 2), so more is
a typo rather than a plan.

`etp` is the expert tensor-parallel degree, Megatron-Core's `--expert-tensor-parallel-size` ("Degree of tensor
model parallelism of expert layer. Default is same to --tensor-model-parallel-size", MoE README's argument
table). Empty (None) follows tp, Megatron's default and what the planner assumed before the input existed:
each routed expert's matrices split over the tp ranks. MoE Parallel Folding (the same README) builds the
expert layers' groups apart from attention's, in the order etp-ep-dp-pp, so the etp × ep expert group is a
sub-group of attention's tp × cp × dp ranks; parallel_state.initialize_model_parallel refuses a world size
that etp × ep × pp does not divide. The planner keeps the context ranks out of that group (as its ep rule
already did: ep divides dp), so etp × ep must divide tp × dp; with etp = tp that is ep | dp, the old rule.
1024 as for tp. The formulas' use of it: planner/formulas/step/moe.py.
"""

from __future__ import annotations

from typing import Any

FIELDS: dict[str, dict[str, Any]] = {
    "moe_capacity_factor": {
        "default": 1.0,
        "ge": 1.0,
        "le": 16.0,
        "description": "MoE capacity factor: busiest expert-parallel rank's tokens over the average; "
        "1 = dropless, balanced",
    },
    "etp": {
        "default": None,
        "ge": 1,
        "le": 1024,
        "description": "expert tensor-parallel degree (MoE only): each routed expert's matrices split over "
        "etp GPUs; empty = follows tp",
    },
}
