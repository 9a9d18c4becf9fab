"""The share link: the address of this page with the whole current scenario in its query string.

`app.py` writes the same query string into the browser's URL at the end of every run (`ui.state`), so the link
shown here is what the address bar holds after the run; building it from the scenario (not from
`st.query_params`) keeps it right on the very run that changed the scenario.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

import streamlit as st

from planner import Scenario, scenario_to_query
from ui.state import scenario


def share_query(current: Scenario | None = None) -> str:
    """ "key=value&..." for the inputs that differ from the defaults ("" when none do)."""
    return urlencode(scenario_to_query(current if current is not None else scenario()), quote_via=quote)


def share_url(current: Scenario | None = None) -> str:
    """Absolute when the browser told us its address (`st.context.url`, the page's URL without query);
    otherwise just "?query", to append to the app's address (AppTest and bare script runs have no browser)."""
    query = share_query(current)
    base = _page_url()
    if not query:
        return base or "(the app's address: every input is at its default)"
    return f"{base}?{query}"


def render_share_link(*, caption: bool = True) -> None:
    """The link in a code block (it has a copy button) and a line on what it carries."""
    st.code(share_url(), language=None, wrap_lines=True)
    if caption:
        st.caption(
            "Copy with the button at the right of the box. The link opens this page with the current "
            "scenario and needs no database; saved plans are in the team library on the Scenarios page."
        )


def share_popover(label: str = "Copy link", key: str = "share.open") -> None:
    """A compact button for any page's header that opens the link."""
    # Drawn only while open: the link is rebuilt on opening, and a closed button costs one message per rerun.
    # The code block loads the browser's syntax highlighter (1.6 MB of script) the first time one is drawn: a
    # page that showed the link on arrival (Scenarios) made every visit by URL wait for it.
    box = st.popover(label, icon=":material/link:", key=key, on_change="rerun")
    if box.open:
        with box:
            render_share_link()


def _page_url() -> str:
    return st.context.url or ""  # None without a browser behind the session (AppTest, bare runs)
