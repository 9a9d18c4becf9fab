"""The memory verdict's three states in a real browser: QLoRA Llama 3.1 8B on one RTX 4090 (23.99 GiB) at 1,024,
2,048 and 4,096 tokens is "fits", "tight — may run out of memory" and "does not fit" (device totals 15.0, 21.6 and
34.8 GiB; the high end of the measured error band at 2,048 tokens, 27.4 GiB, is over the card). Each plan is opened
from its share URL; Overview's headline and breakdown and the Memory page's rows say the same verdict."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

import pytest

from planner import Scenario, default_catalogs, estimate, scenario_to_query
from tests.e2e.app_page import AppPage

pytestmark = pytest.mark.e2e
QLORA_4090 = Scenario(model="Llama 3.1 8B", method="qlora", gpu="RTX 4090", n_gpus=1)
STATES = {1024: "fits", 2048: "tight — may run out of memory", 4096: "does not fit"}


def test_overview_and_memory_show_each_verdict(open_app_page: Callable[[str], AppPage]) -> None:
    for seq_len, verdict in STATES.items():
        plan = QLORA_4090.updated(seq_len=seq_len)
        assert estimate(plan, default_catalogs()).fit_verdict == verdict  # the library's own answer
        app = open_app_page("/?" + urlencode(scenario_to_query(plan)))
        app.expect_heading("Overview")
        headline = app.metrics()["Peak memory per GPU"]
        shown = "does NOT fit" if verdict == "does not fit" else verdict
        assert f"{shown} in " in headline, (seq_len, headline)
        main = app.page.get_by_test_id("stMain")
        assert "Memory verdict" in main.inner_text()
        if verdict != "fits":  # the box that offers fixes names the state and the band's high end
            head = "Does not fit" if verdict == "does not fit" else "Tight — may run out of memory"
            assert (
                head in main.inner_text() and "high end of the memory model's error band" in main.inner_text()
            )
        app.nav("Memory")
        text = app.page.get_by_test_id("stMain").inner_text()
        for row in ("Allocated peak", "Reserved peak", "Device total", "Device total, high end"):
            assert row in text, (seq_len, row)
        assert shown in text
        assert ("Ways to make it fit with margin" in text) == (verdict != "fits")
        app.shot(f"memory-{seq_len}")
