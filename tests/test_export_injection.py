"""Exports cannot be hijacked by a name: hostile model-shape names through every exporter, the output parsed back
with each format's own parser, and the parsed structure equal to what the exporter meant to write.

Two defences, each tested on its own: the shape's validation (folded to one NFC line, or refused with a clear
message) and the exporters' serializers (which must hold even for a name that bypassed validation).
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from functools import cache
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from planner import EXPORT_TARGETS, Export, PlannerError, Scenario, default_catalogs, export_plan
from planner.inputs.errors import scenario_error
from planner.model.labels import BIDI_CONTROLS, check_label, single_line
from planner.model.shape import ModelShape
from tests.ci import n_examples

# A small Llama-like shape (2 layers of width 256), enough for every exporter including Megatron's shape flags.
SHAPE = dict(
    vocab_size=32000, hidden_size=256, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=64, ffn_hidden=688
)
# The line breaks Python's str.splitlines (and YAML 1.1 / TOML readers in part) honour, one each.
LINE_BREAKS = ["\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
INJECTIONS = [
    "x\ntokenizer: {_component_: os.system, command: id}",
    "x\r\ntokenizer:\r\n  _component_: os.system",
    "x\u2028tokenizer: {_component_: os.system}",
    "x\x85model: {_component_: os.system}",
    'x\n[evil]\ncommand = "id"',  # a TOML table
    "x\n--data-path /etc/passwd",  # a Megatron flag
    '", "zero_optimization": {"stage": 0}, "x": "',  # JSON string breakout
    "x\u202egnp.exe",  # right-to-left override
    "a\u2066b\u2069c",  # bidi isolates
    "nul\x00byte",
    "zero\u200bwidth",
    "e\u0301",  # decomposed é: NFC makes it one character
    "#" * 500,  # very long
    "x" * 5000,
    "' ; rm -rf / ; '",
    "$(id)`id`",
    "---\n...\n%YAML 1.2",
]
HOSTILE_NAMES = [f"name{brk}injected: true" for brk in LINE_BREAKS] + INJECTIONS
HOSTILE_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(
            [
                *(b for b in LINE_BREAKS if len(b) == 1),
                *BIDI_CONTROLS,
                "\x00",
                "\t",
                "#",
                ":",
                "'",
                '"',
                "[",
                "]",
                "{",
                "}",
                "\\",
            ]
        ),
        st.characters(),
    ),
    max_size=300,
)
# Plans whose exports take different paths: LoRA on one GPU, sharded full training with TP/PP, MoE-free offload.
PLANS = {
    "lora, 1 GPU": dict(method="lora", n_gpus=1, micro_batch=2, grad_accum=4, seq_len=1024),
    "full, tp2 pp2, 8 GPUs": dict(
        n_gpus=8, tp=2, pp=2, sequence_parallel=True, zero_stage=1, grad_accum=4, seq_len=2048
    ),
    "full, zero-3 offload, 16 GPUs": dict(
        n_gpus=16, zero_stage=3, offload_params=True, offload_optimizer=True, seq_len=4096
    ),
}


@cache
def _cats() -> Any:
    return default_catalogs()


def _plan(plan: str, name: str = "plain") -> Scenario:
    # No preset (model ""): the shape's own name is the one the files' comments carry.
    return Scenario(model="", model_shape=ModelShape(name=name, **SHAPE), **PLANS[plan])


def _bypassing_validation(plan: str, name: str) -> Scenario:
    """The plan with `name` put in as it is, as a stored or hand-built object could carry it."""
    base = _plan(plan)
    assert base.model_shape is not None
    return base.model_copy(update={"model_shape": base.model_shape.model_copy(update={"name": name})})


def _parsed(export: Export) -> Any:
    if export.target == "deepspeed":
        return json.loads(export.text)
    if export.target in ("accelerate", "torchtune", "trl"):
        return yaml.safe_load(export.text)
    if export.target == "torchtitan-0.2":
        return tomllib.loads(export.text)
    return [shlex.split(line) for line in export.text.split("\n")[:-1]]


def _assert_intended(hostile: Export, plain: Export) -> None:
    """Parsed back, the file is what the exporter meant, the same as for a plain name; nothing but the comment
    naming the plan differs, and every line of the file is one line for any reader."""
    assert _parsed(hostile) == hostile.content == plain.content
    assert hostile.text.splitlines() == hostile.text.split("\n")[:-1]  # \n is the only line break in the file
    changed = [
        (a, b) for a, b in zip(hostile.text.split("\n"), plain.text.split("\n"), strict=True) if a != b
    ]
    assert all(a.startswith("# Plan: ") and b.startswith("# Plan: ") for a, b in changed), changed
    assert not any(ch in BIDI_CONTROLS or ch == "\x00" for ch in hostile.text)
    for sentence in (*hostile.not_expressed, *hostile.notes):
        assert sentence.splitlines() == [sentence]


def _every_target_holds(plan: str, name: str, scenario: Scenario) -> None:
    for target in EXPORT_TARGETS:
        try:
            plain = export_plan(_plan(plan), _cats(), target)
        except PlannerError:  # a target that lacks the model refuses it, whatever its name
            with pytest.raises(PlannerError) as refused:
                export_plan(scenario, _cats(), target)
            assert str(refused.value).splitlines() == [str(refused.value)]
            continue
        _assert_intended(export_plan(scenario, _cats(), target), plain)


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
@pytest.mark.parametrize("plan", list(PLANS))
def test_the_hostile_corpus_cannot_change_any_export_even_unvalidated(plan: str, name: str) -> None:
    _every_target_holds(plan, name, _bypassing_validation(plan, name))


@settings(max_examples=n_examples(40), deadline=None)
@given(name=HOSTILE_TEXT, plan=st.sampled_from(list(PLANS)))
@example(name="x\ntokenizer: {_component_: os.system, command: id}", plan="lora, 1 GPU")
@example(name='x\n[evil]\ncommand = "id"', plan="full, tp2 pp2, 8 GPUs")
@example(name="x\u2028y\x85z\u2029w\r\nv", plan="full, zero-3 offload, 16 GPUs")
@example(name="", plan="lora, 1 GPU")  # found by this test: an empty name raised a TypeError
@example(name=" \n ", plan="lora, 1 GPU")
def test_any_name_through_every_exporter_parses_to_the_intended_structure(name: str, plan: str) -> None:
    """The exporters' own defence: a name that bypassed validation still cannot add or change a key."""
    _every_target_holds(plan, name, _bypassing_validation(plan, name))


@settings(max_examples=n_examples(40), deadline=None)
@given(name=HOSTILE_TEXT)
@example(name="x\ntokenizer: {_component_: os.system}")
@example(name="x\u202egnp.exe")
@example(name="nul\x00byte")
@example(name="x" * 121)
@example(name="")  # found by this test: an empty name is kept empty (a file says "an unnamed model shape")
def test_a_shape_name_is_one_printable_nfc_line_or_refused_with_a_clear_message(name: str) -> None:
    """The boundary's defence: white space (line breaks included) folds to single spaces; control, bidi and
    invisible characters, or more than 120 characters, are refused naming the field and the code points."""
    try:
        shape = Scenario.model_validate({"model": "", "model_shape": {"name": name, **SHAPE}}).model_shape
    except ValidationError as raised:
        err = scenario_error(raised)
        message = err.describe()
        assert err.field == "model_shape" and "name" in err.path
        assert (message.splitlines() == [message] and "U+" in message) or "too long" in message
        return
    assert shape is not None
    assert shape.name == single_line(name, 120) and len(shape.name.splitlines()) <= 1
    assert shape.name.isprintable() and not set(shape.name) & BIDI_CONTROLS


@pytest.mark.parametrize(
    ("typed", "kept"),
    [
        ("Llama\nfine-tune", "Llama fine-tune"),
        ("  two\r\n\r\nlines\u2028and\x85more  ", "two lines and more"),
        ("cafe\u0301", "café"),  # NFC: one precomposed character
        ("tab\tname", "tab name"),
    ],
)
def test_white_space_in_a_shape_name_folds_to_one_line(typed: str, kept: str) -> None:
    assert ModelShape(name=typed, **SHAPE).name == kept == check_label(typed)


@pytest.mark.parametrize(
    ("typed", "code_point"),
    [("x\u202eexe", "U+202E"), ("a\u2066b", "U+2066"), ("nul\x00", "U+0000"), ("zw\u200bj", "U+200B")],
)
def test_bidi_and_invisible_characters_are_refused_by_code_point(typed: str, code_point: str) -> None:
    with pytest.raises(PlannerError, match=re.escape(code_point)):
        check_label(typed, "name")


def test_an_imported_config_file_name_is_cleaned_not_refused() -> None:
    from planner.model.hf_config import shape_from_hf_config

    config = {"model_type": "llama", "vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2}
    config |= {"num_attention_heads": 4, "intermediate_size": 128}
    shape = shape_from_hf_config(json.dumps(config), name="evil\u202e\nname")
    assert shape.name == "evil name"


def test_cli_refuses_a_bidi_shape_name_in_one_line(tmp_path, capsys) -> None:
    from planner.cli.main import main

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"model": "", "model_shape": {"name": "x\u202eexe", **SHAPE}}))
    assert main(["export", "--to", "torchtune", str(plan)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "U+202E" in err and "Traceback" not in err
