"""The folded key under which plan names that look the same are one name (planner.library.names): worked
lookalikes, and properties over generated text (derandomised under CI=true; failures kept as @example)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from planner.library.names import fold_name, plan_id_in, shown, utf8_problem
from tests.ci import n_examples

# Characters a name can hide without changing how it looks: zero-width space, non-joiner and joiner, word joiner,
# left-to-right mark, right-to-left override, pop directional formatting, first-strong isolate, soft hyphen,
# byte-order mark, combining grapheme joiner, variation selector 16.
INVISIBLE = "\u200b\u200c\u200d\u2060\u200e\u202e\u202c\u2068\u00ad\ufeff\u034f\ufe0f"
NAME_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Cf")), min_size=1, max_size=30)


@pytest.mark.parametrize(
    ("typed", "key"),
    [
        ("plan", "plan"),
        ("pl\u200ban", "plan"),  # zero-width space
        ("\u202eplan\u202c", "plan"),  # right-to-left override and its pop
        ("\uff50\uff4c\uff41\uff4e", "plan"),  # full-width letters (NFKC)
        ("\ufb01le", "file"),  # the fi ligature (NFKC)
        ("cafe\u0301", "caf\u00e9"),  # e + combining acute = precomposed e-acute (NFC inside NFKC)
        ("caf\u00e9\u0301", "caf\u00e9"),  # the same accent twice looks like once
        ("\u0301plan", "plan"),  # a mark on nothing
        ("a \u0301b", "a b"),  # a mark on a space
        ("8B  LoRA\u00a0run", "8B LoRA run"),  # a doubled space and a no-break space
        ("e\u200b\u0301", "\u00e9"),  # the hidden character removed, the letter and its mark compose
        (
            "\u0928\u092e\u0938\u094d\u0924\u0947",
            "\u0928\u092e\u0938\u094d\u0924\u0947",
        ),  # Devanagari marks stay
        ("Plan", "Plan"),  # case is not folded: "Plan" and "plan" look different
    ],
)
def test_worked_lookalikes_fold_to_one_key(typed, key):
    assert fold_name(typed) == key


@settings(max_examples=n_examples(300), deadline=None)
@given(NAME_TEXT)
@example("e\u200b\u0301")
def test_the_key_of_a_key_is_itself(name):
    assert fold_name(fold_name(name)) == fold_name(name)


@settings(max_examples=n_examples(300), deadline=None)
@given(NAME_TEXT, st.integers(min_value=0, max_value=30), st.sampled_from(INVISIBLE))
@example("e\u0301", 1, "\u200b")
def test_an_invisible_character_anywhere_does_not_change_the_key(name, position, invisible):
    position = min(position, len(name))
    assert fold_name(name[:position] + invisible + name[position:]) == fold_name(name)


@settings(max_examples=n_examples(300), deadline=None)
@given(NAME_TEXT)
def test_canonically_equivalent_spellings_share_a_key(name):
    assert fold_name(unicodedata.normalize("NFD", name)) == fold_name(unicodedata.normalize("NFC", name))


def test_text_that_utf8_cannot_carry_is_found_and_shown_replaced():
    assert utf8_problem("fine \u00e9 \U0001f680") is None
    assert utf8_problem("ok\udcff") == "is not valid UTF-8 text (character 3 is a byte that is not UTF-8)"
    assert shown("ok\udcff\ud800x") == "ok\ufffd\ufffdx"


@pytest.mark.parametrize(
    ("ref", "plan_id"),
    [
        *(("1", 1), (" 42 ", 42), ("2147483647", 2147483647)),
        *(("2147483648", None), ("0", None), ("9" * 40, None), ("-1", None), ("1e3", None)),
        *(("\u00b2", None), ("\u0661", None)),  # a superscript two, an Arabic-Indic one: digits, not ids
    ],
)
def test_only_ascii_ids_the_database_can_hold_are_ids(ref, plan_id):
    assert plan_id_in(ref) == plan_id
