"""Offline: no page asks any host but the app's own server for anything (fonts, icons, scripts, the favicon).

Every request the browser makes for the page is recorded from the first load, through every page of the
navigation, with time for lazily loaded chunks (charts, the data grid) and the favicon to follow. A Streamlit
page icon written as ":material/...:" would show up here as a favicon from fonts.gstatic.com.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.e2e.app_page import AppPage

pytestmark = pytest.mark.e2e

PAGES = [
    "Plan sheet",
    "Overview",
    "Compute",
    "Memory",
    "Cost",
    "Energy",
    "Compare GPUs",
    "Plan search",
    "Scenarios",
    "Methods & data",
]
LOCAL_SCHEMES = {"data", "blob", "about"}
SETTLE_MS = 1500  # lazily loaded chunks and the favicon request follow the first paint


def _outside(urls: list[str], server_host: str) -> list[str]:
    return [
        url
        for url in urls
        if urlsplit(url).scheme not in LOCAL_SCHEMES and urlsplit(url).hostname != server_host
    ]


def test_no_page_requests_an_outside_host(page, app_url: str, request: pytest.FixtureRequest) -> None:
    requested: list[str] = []
    page.on("request", lambda req: requested.append(req.url))
    app = AppPage(page, app_url, request.node.name).goto("/")
    page.wait_for_timeout(SETTLE_MS)
    visited = []
    for title in PAGES:
        app.nav(title)
        page.wait_for_timeout(SETTLE_MS)
        visited.append(title)
    host = urlsplit(app_url).hostname
    assert host == "127.0.0.1"
    assert len(visited) == len(PAGES) and any("/_stcore/" in url for url in requested), "requests were seen"
    assert _outside(requested, host) == [], "fetched from outside the server"
    favicon = page.evaluate("() => document.querySelector(\"link[rel='shortcut icon']\")?.href ?? ''")
    assert favicon.startswith(("data:", app_url)), favicon
