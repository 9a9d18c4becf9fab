"""Bytes per token that autograd keeps for backward in Hugging Face Llama code, with and without PEFT LoRA.

Usage: python scripts/eager_saved_bytes.py   (needs torch, transformers and peft; prints JSON)

One decoder layer of a small Llama-shaped model (hidden 512, 8 query and 2 key/value heads of 64, MLP 1,792,
sequence 512, bf16, sdpa attention) runs one forward under torch.autograd.graph.saved_tensors_hooks; every
distinct storage autograd saves is counted once, parameters excluded. These counts are the measurements
planner/formulas/memory/eager.py rests on (tests/test_eager_memory.py holds them as golden figures).
"""

from __future__ import annotations

import json
from collections import Counter

SHAPE = {"hidden": 512, "n_heads": 8, "n_kv_heads": 2, "head_dim": 64, "ffn_hidden": 1792, "seq_len": 512}
ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def saved_storages(targets: list[str] | None, frozen: bool, autocast: bool = False) -> Counter:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=SHAPE["hidden"], num_attention_heads=SHAPE["n_heads"], num_key_value_heads=SHAPE["n_kv_heads"],
        head_dim=SHAPE["head_dim"], intermediate_size=SHAPE["ffn_hidden"], num_hidden_layers=1, vocab_size=256,
        attn_implementation="sdpa",
    )  # fmt: skip
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    if targets:
        model = get_peft_model(model, LoraConfig(r=8, target_modules=targets, lora_dropout=0.0))
    elif frozen:
        model.requires_grad_(False)
    if frozen:  # the layer's input needs gradients, as every layer's but the first does in a deep model
        model.get_input_embeddings().weight.requires_grad_(True)
    layer = model.get_decoder().layers[0]
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    inside: dict[int, tuple[int, str, tuple[int, ...]]] = {}
    active = [False]

    def pack(tensor):
        storage = tensor.untyped_storage()
        if active[0] and storage.data_ptr() not in params:
            inside[storage.data_ptr()] = (storage.nbytes(), str(tensor.dtype), tuple(tensor.shape))
        return tensor

    layer.register_forward_pre_hook(lambda *_: active.__setitem__(0, True))
    layer.register_forward_hook(lambda *_: active.__setitem__(0, False))
    with (
        torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor),
        torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast),
    ):
        model(input_ids=torch.randint(0, 256, (1, SHAPE["seq_len"])))
    return Counter(inside.values())


def main() -> None:
    out = {}
    for name, targets, frozen, autocast in (
        ("full", None, False, False),
        ("frozen_base", None, True, False),
        ("lora_q_v", ["q_proj", "v_proj"], True, False),
        ("lora_all_linear", ALL_LINEAR, True, False),
        ("lora_all_linear_autocast", ALL_LINEAR, True, True),
        ("frozen_base_autocast", None, True, True),
    ):
        counts = saved_storages(targets, frozen, autocast)
        total = sum(n * k for (n, _, _), k in counts.items())
        out[name] = {
            "bytes_per_token": total / SHAPE["seq_len"],
            "storages": [[*key, k] for key, k in counts.items()],
        }
    print(json.dumps({"shape": SHAPE, "layer": out}, indent=1))


if __name__ == "__main__":
    main()
