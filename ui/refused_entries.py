"""Refused entries that apply once their conflict is gone.

A number box keeps a refused entry, with the reason under it, until the entry is valid or cleared
(`ui.state.bound(..., beside=True)`). Most refusals are about another input (completion tokens no shorter than
the tokens per example, GPUs not a multiple of the parallel degrees): when the user changes that other input, the
entry still in the box becomes valid, and the plan takes it at the start of the next run, before any widget or
figure is drawn. So the box and the plan never disagree without a message saying so.
"""

from __future__ import annotations

import streamlit as st

from ui.state import LABELS_KEY, REJECTED_KEY, UNREAD, Rejected, _try_changes, scenario


def retry_refused() -> None:
    """Apply each refused entry that the plan now accepts; drop those the plan has moved past."""
    refused: dict[str, Rejected] = st.session_state.get(REJECTED_KEY) or {}
    labels = st.session_state.get(LABELS_KEY, {})
    for field, entry in list(refused.items()):
        if getattr(scenario(), field) != entry.kept:  # the plan moved on (a loaded plan): the entry is stale
            refused.pop(field)
            continue
        if entry.value is UNREAD:  # not a number at all: only the user can fix it
            continue
        if _try_changes({field: labels.get(field, field)}, {field: entry.value}) is None:
            refused.pop(field)
