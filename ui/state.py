"""One scenario per browser session; widgets are views of it.

The scenario lives under a key no widget uses, so Streamlit's widget clean-up on page switches never touches it.
Each widget is keyed `w.<field>`, seeded from the scenario just before it renders and committed back in its
`on_change` callback through full validation; an invalid entry leaves the previous value in place and says why,
naming the widget by the label shown on screen (the error's field, or the widget of its rule the user touched).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st
from pydantic import ValidationError

from planner import (
    PAGE_PARAMETERS,
    PlannerError,
    Scenario,
    drop_unknown_names,
    is_multimodal,
    power_limit_refusal,
    precision_refusal,
    scenario_error,
    scenario_from_query,
    scenario_to_query,
    supported_precisions,
)
from ui.safe_text import plain

SCENARIO_KEY = "scenario"
NOTICES_KEY = "notices"
WIDGET_PREFIX = "w."
# Field -> the label of the widget `bound` last rendered for it, so a notice about a field the user did not touch
# this time still names what is on screen.
LABELS_KEY = "field_labels"
# Field -> the `Rejected` entry a `bound(..., beside=True)` widget shows under itself until it is changed.
REJECTED_KEY = "rejected_entries"


def init_state() -> None:
    """First run of a session: read the share link once; later runs keep the session's own scenario."""
    ss = st.session_state
    if SCENARIO_KEY not in ss:
        scenario, notices = scenario_from_query(st.query_params.to_dict())
        scenario, unknown = drop_unknown_names(scenario, _name_lookups())
        scenario, refused = _runnable_precision(scenario)
        scenario, capped = _allowed_power_limit(scenario)
        ss[SCENARIO_KEY] = scenario
        ss[NOTICES_KEY] = notices + unknown + refused + capped


def _runnable_precision(linked: Scenario) -> tuple[Scenario, list[str]]:
    """A link pairing its GPU with a precision the GPU cannot run keeps the GPU and drops the precision, for
    the default or else the first the GPU runs, with a notice (as an unknown name is dropped)."""

    refused = _precision_refusal(linked)
    chosen = None if refused is None else _precision_it_runs(linked.gpu)
    if refused is None or chosen is None:  # nothing to offer: the pages say why the plan cannot be estimated
        return linked, []
    notice = refused.describe("Ignored link parameter 'precision'")
    return linked.updated(precision=chosen), [f"{notice}; the plan uses {chosen}"]


def _allowed_power_limit(s: Scenario) -> tuple[Scenario, list[str]]:
    """A typed power limit outside the GPU's range (a link, or a GPU change) is dropped for the catalogue's,
    with a notice, so the GPU the user picked is kept."""
    refused = _power_limit_problem(s)
    if refused is None:
        return s, []
    notice = refused.describe("Ignored power limit ('power_limit_w')")  # the key too, as every link notice
    return s.updated(power_limit_w=None), [f"{notice}; the plan uses the catalogue's limit"]


def _precision_it_runs(gpu: str) -> str | None:
    """The default precision when the GPU runs it, else the first it runs (None: it runs none we know)."""
    from ui.data import catalogs

    runs = supported_precisions(catalogs().gpu(gpu))
    default = Scenario.model_fields["precision"].default
    return default if default in runs else (runs[0] if runs else None)


def _power_limit_problem(s: Scenario) -> PlannerError | None:
    """Why the scenario's typed power limit is outside its GPU's range, or None (also for a GPU the catalogues
    lack: the pages say that one when they resolve)."""
    from ui.data import catalogs

    try:
        return power_limit_refusal(s, catalogs())
    except PlannerError:
        return None


def _precision_refusal(s: Scenario) -> PlannerError | None:
    """Why the scenario's GPU cannot run its precision, or None (also for a GPU the catalogues lack: the pages
    say that one when they resolve)."""
    from ui.data import catalogs

    try:
        return precision_refusal(s, catalogs())
    except PlannerError:
        return None


def _name_lookups() -> dict[str, Callable[[str], object]]:
    """Lookups that raise ValueError (naming the closest matches) for names the catalogues do not know."""
    from ui.data import catalogs

    cats = catalogs()

    def snapshot(name: str) -> None:
        if name not in cats.snapshot_ids():
            raise PlannerError(
                "snapshot", "no such price snapshot", value=name, allowed=", ".join(cats.snapshot_ids())
            )

    def model(name: str) -> None:
        # vision-language and diffusion presets live beside the catalogue's text models, not in it
        if not is_multimodal(Scenario(model=name)):
            cats.model(name)

    return {
        "gpu": cats.gpu,
        "region": cats.region,
        "model": model,
        "snapshot": snapshot,
    }


def scenario() -> Scenario:
    return st.session_state[SCENARIO_KEY]


def set_scenario(new: Scenario) -> None:
    st.session_state[SCENARIO_KEY] = new


def apply_changes(*, labels: Mapping[str, str] | None = None, **changes: Any) -> bool:
    """Validate and store a change set; on failure keep the old scenario and queue a notice.

    `labels` names the widgets this change came from (field -> label on screen), for the notice.
    """
    problem = _try_changes(labels or {}, changes)
    if problem is not None:
        add_notice(problem)
    return problem is None


def _try_changes(labels: Mapping[str, str], changes: Mapping[str, Any]) -> str | None:
    """Store the changes if they validate; else the message saying why not (the scenario is kept).

    A change of GPU or precision is also checked against the catalogue: a GPU cannot be paired with a
    precision it cannot run (planner.catalogue.precisions), the same refusal the CLI gives. Picking such a GPU
    without choosing a precision switches the precision to one the GPU runs and says so, so the GPU the user
    picked is kept (a V100 under the default bf16_mixed gets fp16_mixed); a precision chosen is refused.
    """
    try:
        changed = scenario().updated(**changes)
    except ValidationError as err:
        return describe_for_app(scenario_error(err), labels)
    refused = _precision_refusal(changed) if {"gpu", "precision"} & set(changes) else None
    runs = None if refused is None or "precision" in changes else _precision_it_runs(changed.gpu)
    if refused is not None and runs is None:
        return describe_for_app(refused, labels)
    if refused is not None and runs is not None:
        changed = changed.updated(precision=runs)
        add_notice(f"{describe_for_app(refused, labels)}. Precision is now {runs}, which it runs.")
    if "power_limit_w" in changes:  # a limit typed outside the GPU's range is refused beside the box
        limit_refused = _power_limit_problem(changed)
        if limit_refused is not None:
            return describe_for_app(limit_refused, labels)
    elif "gpu" in changes:  # a new GPU whose range excludes the typed limit: the limit goes, the GPU stays
        changed, dropped = _allowed_power_limit(changed)
        for notice in dropped:
            add_notice(notice)
    set_scenario(changed)
    return None


def describe_for_app(error: PlannerError, touched: Mapping[str, str]) -> str:
    """The notice for a rejected change, named by the label of a widget the user touched (else its own)."""
    label = next((touched[field] for field in error.fields if field in touched), None)
    if label is None and touched:
        label = next(iter(touched.values()))  # a rule about fields left as they were: name what changed
    shown = st.session_state.get(LABELS_KEY, {})
    subject = ""
    if label is not None and touched.get(error.field) != label:
        subject = shown.get(error.field, error.field)  # the sentence is about another input: say which
    return error.describe(
        label if label is not None else shown.get(error.field, error.field), subject=subject
    )


def add_notice(message: str) -> None:
    st.session_state.setdefault(NOTICES_KEY, []).append(message)


def show_notices() -> None:
    """Messages about rejected input, shown once on the next run."""
    for message in st.session_state.get(NOTICES_KEY, []):
        st.warning(plain(message), icon=":material/error:")
    st.session_state[NOTICES_KEY] = []


@dataclass(frozen=True)
class Rejected:
    """An entry the plan did not take: the text left in the box, why, and the value the plan kept."""

    entry: Any
    message: str
    kept: Any
    value: Any = None  # the entry read as the field's value (UNREAD: not a value of the field at all)


def _commit(field: str, label: str, to_model: Callable[[Any], Any] | None, beside: bool) -> None:
    entry = st.session_state[WIDGET_PREFIX + field]
    rejected: dict[str, Rejected] = st.session_state.setdefault(REJECTED_KEY, {})
    rejected.pop(field, None)
    kept = getattr(scenario(), field)
    value: Any = UNREAD
    try:
        value = to_model(entry) if to_model else entry
    except PlannerError as err:  # text that is not a number of this field: refused, said beside the box
        problem: str | None = describe_for_app(err, {field: label})
    else:
        problem = _try_changes({field: label}, {field: value})
    if problem is None:
        return
    if beside:
        rejected[field] = Rejected(entry, problem, kept, value)
    else:
        add_notice(problem)


_UNSET = object()  # no widget state yet (first run, or the box was not drawn on the previous run)
UNREAD = object()  # a refused entry that is not a value of its field at all (text in a number box)


def show_in_widget(field: str, shown: Any) -> None:
    """Make the widget of `field` hold `shown`, writing its state only when it holds something else.

    Why only then: a widget given its value through session state is sent with "set value", and the browser
    re-applies that value on every rerun. Writing all seven sidebar boxes and pickers on each run cost about
    25 ms of script time in the browser per edit (bench/browser_bench.py: 170 -> 143 ms against a 90 ms floor,
    measured in one sitting).
    """
    if st.session_state.get(WIDGET_PREFIX + field, _UNSET) != shown:
        st.session_state[WIDGET_PREFIX + field] = shown


def bound(
    widget: Callable[..., Any],
    label: str,
    field: str,
    *,
    to_widget: Callable[[Any], Any] | None = None,
    to_model: Callable[[Any], Any] | None = None,
    beside: bool = False,
    **kwargs: Any,
) -> Any:
    """Render `widget` as a view of `scenario().<field>`. Never pass value=/index=.

    With `beside`, a rejected entry stays in the box with its message right under it (until the user changes
    it, or the plan's value changes another way); otherwise the message goes to the notices at the top.
    """
    current = getattr(scenario(), field)
    st.session_state.setdefault(LABELS_KEY, {})[field] = label
    rejected = st.session_state.get(REJECTED_KEY, {}).get(field)
    if rejected is not None and rejected.kept != current:  # the plan moved on (a loaded plan, another page)
        st.session_state[REJECTED_KEY].pop(field)
        rejected = None
    shown = rejected.entry if rejected is not None else (to_widget(current) if to_widget else current)
    show_in_widget(field, shown)
    args = (field, label, to_model, beside)
    widget(label, key=WIDGET_PREFIX + field, on_change=_commit, args=args, **kwargs)
    if rejected is not None:
        kept = to_widget(rejected.kept) if to_widget else rejected.kept
        kept_words = f"keeps {kept}" if kept not in ("", None) else "uses the default (an empty box)"
        st.error(
            plain(f"{rejected.message} — not applied; the plan {kept_words} until this is valid or cleared.")
        )
    return current


def sync_query_params() -> None:
    """Write the whole scenario into the URL so the link on any page reproduces the plan."""
    current = st.query_params.to_dict()
    # A page's own parameter (the Methods page's topic) stays for that page to read.
    wanted = {**scenario_to_query(scenario()), **{k: v for k, v in current.items() if k in PAGE_PARAMETERS}}
    if current != wanted:
        st.query_params.from_dict(wanted)
