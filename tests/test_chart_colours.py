"""Charts read the same across plans: a memory component keeps its colour, GPU counts are whole numbers."""

from __future__ import annotations

from planner import Scenario, default_catalogs, estimate, memory_components
from ui import charts

CATS = default_catalogs()
PLANS = [
    Scenario(model="Llama 3.1 8B"),
    Scenario(model="Llama 3.1 8B", zero_stage=2, method="lora"),
    Scenario(model="Llama 3.1 8B", post_training="ppo", n_gpus=8),
]


def colour_of(spec: dict) -> dict[str, str]:
    scale = next(
        layer["encoding"]["color"]["scale"] for layer in spec["layer"] if "color" in layer["encoding"]
    )
    return dict(zip(scale["domain"], scale["range"], strict=True))


def test_every_component_has_a_fixed_colour_in_every_plan():
    seen: dict[str, str] = {}
    for plan in PLANS:
        est = estimate(plan, CATS)
        components = memory_components(est)
        assert set(components["component"]) <= set(charts.MEMORY_COMPONENT_COLOURS)
        colours = colour_of(charts.memory_stack(components, est.vram_gib))
        assert list(colours) == components["component"].to_list()  # the legend lists this plan's components
        for name, colour in colours.items():
            assert seen.setdefault(name, colour) == colour, name
    assert {"Activations", "Reward model", "Value model (critic)"} <= set(seen)
    assert len(set(charts.MEMORY_COMPONENT_COLOURS.values())) == len(charts.MEMORY_COMPONENT_COLOURS)


def test_scaling_chart_ticks_are_whole_gpu_counts():
    spec = charts._scaling_spec()
    axes = [layer["encoding"]["x"]["axis"] for chart in spec["hconcat"] for layer in chart["layer"][:1]]
    assert axes and all(a["format"] == "d" and a["values"] == [2**k for k in range(13)] for a in axes)
