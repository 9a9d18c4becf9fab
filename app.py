"""Entry point: page frame, shared state, the sidebar every page shares, routing and the share link."""

from __future__ import annotations

import streamlit as st

from ui.warmup import import_everything

# Before any other import of ours: sessions opened together on a fresh server must not import the same modules
# concurrently (ui/warmup.py says what that broke); the first imports them all, the others wait.
import_everything()

from ui.garbage import freeze_long_lived_objects  # noqa: E402
from ui.refused_entries import retry_refused  # noqa: E402
from ui.share import share_popover  # noqa: E402
from ui.sidebar import render_sidebar  # noqa: E402
from ui.state import init_state, show_notices, sync_query_params  # noqa: E402
from ui.team_data import render_data_uploads  # noqa: E402
from ui.training_setup import render_training_setup  # noqa: E402

# An emoji icon: Streamlit draws it as an inline SVG (a data: URL). A ":material/...:" page icon would make every
# page fetch the favicon from fonts.gstatic.com, which fails offline (tests/e2e/test_offline.py).
st.set_page_config(page_title="Training Run Planner", page_icon="🧮", layout="wide")
init_state()
retry_refused()  # an entry refused for a conflict with another input applies once that input changed

PAGES_KEY = "app.pages"


def pages() -> dict[str, list]:
    """The navigation's pages, built once per session: building ten `st.Page`s (each resolves its path and checks
    its icon) was a few ms of every rerun's server time (py-spy over bench/browser_bench.py). Per session, not per
    process: a page object carries per-run state that two sessions running at once must not share."""
    if PAGES_KEY not in st.session_state:
        st.session_state[PAGES_KEY] = {
            "Plan": [
                st.Page("app_pages/plan_sheet.py", title="Plan sheet", icon=":material/table_view:"),
                st.Page("app_pages/overview.py", title="Overview", icon=":material/dashboard:", default=True),
                st.Page("app_pages/compute.py", title="Compute", icon=":material/speed:"),
                st.Page("app_pages/memory.py", title="Memory", icon=":material/memory:"),
                st.Page("app_pages/cost.py", title="Cost", icon=":material/payments:"),
                st.Page("app_pages/energy.py", title="Energy", icon=":material/bolt:"),
            ],
            "Decide": [
                st.Page("app_pages/compare.py", title="Compare GPUs", icon=":material/compare:"),
                st.Page("app_pages/plan_search.py", title="Plan search", icon=":material/travel_explore:"),
                st.Page("app_pages/scenarios.py", title="Scenarios", icon=":material/bookmarks:"),
                st.Page("app_pages/runs.py", title="Runs", icon=":material/monitoring:"),
            ],
            "About": [st.Page("app_pages/methods.py", title="Methods & data", icon=":material/menu_book:")],
        }
    return st.session_state[PAGES_KEY]


navigation = st.navigation(pages())
with st.sidebar:
    render_sidebar()
    render_training_setup(navigation.title)
    render_data_uploads()
    share_popover()
# Rejected inputs are reported at the top of the page; the area is filled last so that messages queued by
# widget callbacks and by the page itself during this run all appear.
notice_area = st.container()
# A page may end its run early with st.stop(); the notices and the share link are written before it runs too.
with notice_area:
    show_notices()
sync_query_params()
navigation.run()
with notice_area:
    show_notices()
sync_query_params()
# Last: keeps Streamlit's collection after this run from walking every imported object again (ui/garbage.py).
freeze_long_lived_objects()
