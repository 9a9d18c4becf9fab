"""Choices made on the Cost and Energy pages reach the Overview page (AppTest)."""

from __future__ import annotations

import pytest


def metric_value(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def delta_of(at, label: str) -> str:
    return next(str(m.delta) for m in at.metric if m.label == label)


def overview_cost(at) -> float:
    at.switch_page("app_pages/overview.py").run()
    return float(metric_value(at, "Cost").replace("$", "").replace(",", ""))


def overview_co2e(at) -> float:
    at.switch_page("app_pages/overview.py").run()
    return float(delta_of(at, "Energy and carbon").split()[0].replace(",", ""))


def test_pricing_mode_on_cost_page_changes_overview_cost(app):
    on_demand = overview_cost(app)
    app.switch_page("app_pages/cost.py").run()
    app.selectbox(key="w.pricing").set_value("spot").run()
    assert not app.exception
    assert overview_cost(app) < on_demand


def test_region_and_pue_on_energy_page_change_overview_carbon(app):
    app.sidebar.text_input(key="w.examples").input("3000000").run()  # enough kg to compare closely
    before = overview_co2e(app)
    app.switch_page("app_pages/energy.py").run()
    app.selectbox(key="w.region").set_value("eu-north-1").run()
    assert not app.exception
    cleaner = overview_co2e(app)
    assert cleaner < before
    app.switch_page("app_pages/energy.py").run()
    app.text_input(key="w.pue").input("1.5").run()
    assert overview_co2e(app) == pytest.approx(cleaner * 1.5 / 1.2, rel=0.05)


def test_every_region_table_is_drawn_only_once_opened(app):
    """A closed expander still sends its content: the 132-row table waits for the click (no data grid to load)."""
    app.switch_page("app_pages/energy.py").run()
    assert not app.exception and len(app.dataframe) == 0
    app.session_state["energy.regions"] = True
    app.run()
    regions = app.dataframe[0].value
    assert list(regions.columns) == ["Region", "g CO2e per kWh", "This run, kg CO2e"] and len(regions) >= 130


def test_compute_shows_the_parameter_breakdown_in_words(app):
    app.switch_page("app_pages/compute.py").run()
    text = "\n".join(m.value for m in app.main.markdown)
    # Llama 3.1 8B (the default preset): 8,030,261,248 parameters (Hugging Face safetensors total)
    assert "| Component | Parameters | Billions | Share of total |" in text
    assert "| Total | 8,030,261,248 |" in text
