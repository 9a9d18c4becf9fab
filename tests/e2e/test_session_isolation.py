"""Two browsers on one server never see each other's scenario (each tab is its own Streamlit session)."""

from __future__ import annotations

import pytest

from tests.e2e.app_page import AppPage

pytestmark = pytest.mark.e2e


def _plan(app: AppPage) -> tuple[str, str, str, str]:
    return (
        app.selected("Model", sidebar=True),
        app.selected("GPU", sidebar=True),
        app.number_input("Number of GPUs", sidebar=True).input_value(),
        app.number_input("Epochs", sidebar=True).input_value(),
    )


def test_two_browsers_keep_their_own_scenarios(open_app_page) -> None:
    alice = open_app_page("/")
    bob = open_app_page("/")
    # Interleaved edits: each change reruns one session while the other sits on its own state.
    alice.select("GPU", "H200 SXM", sidebar=True)
    bob.select("Model", "Qwen2.5 7B", sidebar=True)
    alice.set_number("Number of GPUs", "32", sidebar=True)
    bob.set_number("Epochs", "1", sidebar=True)
    for app in (alice, bob):
        app.nav("Cost")
    alice_plan, bob_plan = _plan(alice), _plan(bob)
    assert alice_plan == ("Llama 3.1 8B", "H200 SXM", "32", "3"), alice_plan
    assert bob_plan == ("Qwen2.5 7B", "H100 SXM", "8", "1"), bob_plan
    assert alice.metrics() != bob.metrics()
    alice_query, bob_query = alice.query(), bob.query()
    assert alice_query.get("gpu") == "H200 SXM" and "model" not in alice_query, alice_query
    assert bob_query.get("model") == "Qwen2.5 7B" and "gpu" not in bob_query, bob_query
    alice.shot("alice")
    bob.shot("bob")
    # A reload is a new session seeded only by its own URL.
    alice.goto(alice.page.url)
    assert _plan(alice) == alice_plan
