"""Ten sessions opening pages at the same moment on a fresh server.

Before app.py imported everything once (ui/warmup.py), nine sessions at once showed `ImportError: cannot import
name 'charts' from 'ui'` or a half-initialised pandas in five of nine first runs. Each run of this test starts
its own server, so the first runs really are the first imports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.app_page import RUN_TIMEOUT_MS, AppPage
from tests.e2e.conftest import start_server, stop_server

pytestmark = pytest.mark.e2e

# One per page (their url paths come from the file names in app.py), the default page twice: ten sessions.
PATHS = ["/", "/", "/plan_sheet", "/compute", "/memory", "/cost", "/energy", "/compare", "/plan_search",
         "/scenarios"]  # fmt: skip


def test_ten_sessions_at_once_on_a_fresh_server_show_no_exception(
    browser_available: None, new_context: Any, tmp_path: Path
) -> None:
    server, url = start_server(tmp_path / "server.log")
    try:
        pages = [new_context().new_page() for _ in PATHS]
        for page, path in zip(pages, PATHS, strict=True):
            page.goto(url + path, wait_until="commit")  # returns at once: the ten first runs overlap
        found = {}
        for index, (page, path) in enumerate(zip(pages, PATHS, strict=True)):
            app = AppPage(page, url, f"cold-start-{index}")
            content = page.get_by_test_id("stHeading").or_(page.get_by_test_id("stException"))
            content.first.wait_for(timeout=RUN_TIMEOUT_MS * 3)  # ten cold first runs share two cores
            page.wait_for_function(
                "() => document.querySelector(\"[data-testid='stApp']\")"
                "?.getAttribute('data-test-script-state') === 'notRunning'",
                timeout=RUN_TIMEOUT_MS * 3,
            )
            found[f"{index}:{path}"] = app.exceptions()
        failed = {key: texts[0][:300] for key, texts in found.items() if texts}
        assert not failed, failed
    finally:
        stop_server(server)
