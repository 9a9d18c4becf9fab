"""Methods & data: every estimate's formula in plain words with its source, the catalogues, the accuracy."""

from __future__ import annotations

from typing import Any

import streamlit as st

from planner import Scenario
from ui.blocks import small_table
from ui.data import catalogs, session_uploads, team_data
from ui.methods_data import (
    accuracy_report,
    accuracy_rows_table,
    accuracy_summary_table,
    app_version,
    catalogue_frames,
    catalogue_summary,
    snapshot_table,
    sources_table,
)
from ui.methods_link import TOPICS, requested_topic
from ui.methods_multimodal import multimodal
from ui.methods_post import post_training
from ui.methods_step import step_model
from ui.safe_text import plain
from ui.state import scenario
from ui.team_data import origin_markdown, team_error_markdown


def _default(field: str) -> float:
    """A Scenario default, so the text quotes the figure the estimate really uses."""
    return float(Scenario.model_fields[field].default)


def tokens() -> None:
    st.markdown("""
- **Training tokens** = examples × tokens per example × epochs (the figure the seed starts from); a total
  token count, when given, replaces the product.
- **Processed tokens** are what the GPUs actually compute on. With packing, examples are concatenated into
  full sequences and nothing is wasted. Without it, every example starts a new sequence padded up to the
  sequence length (a longer one is split over several sequences), so 1,000-token examples in 4,096-token
  sequences cost 4.1 times their tokens. The mean example length is used, so varied lengths make this a floor.
- **Sequence length**, unless you set one, follows the data. Packed: the smallest power of two that holds one
  example, at least 512 tokens (packing fills every sequence anyway, so a longer window only costs attention and
  activation memory). Padded: one example rounded up to a multiple of 64 tokens. Never above the model's
  context length; longer examples are then split.
- **Tokens per optimizer step** = micro-batch × gradient-accumulation steps × data-parallel replicas ×
  sequence length. Tensor-, pipeline- and context-parallel ranks work on the same sequences, so only the
  data-parallel degree multiplies. Steps = processed tokens ÷ tokens per step, rounded up.
""")


def flops() -> None:
    st.markdown("""
- **Full training: 6 FLOPs per parameter per token**, 2 in the forward pass and 4 in the backward pass
  (Kaplan et al. 2020; Narayanan et al. 2021, eq. 3). The parameters counted are the weights a token is
  multiplied through: the transformer layers' linear weights (only the active experts of a mixture of experts)
  and the output head, not the embedding lookup.
- **Attention** adds the two products QKᵀ and A·V, which have no weights: 4 × layers × sequence × heads × head
  size FLOPs per token forward, halved by the causal mask that fused (flash) kernels skip, and three times
  that for forward plus backward (Chowdhery et al. 2022, PaLM appendix B; Megatron-LM's current FLOP count).
- **LoRA and QLoRA: 4 per base parameter + 6 per adapter parameter.** The frozen base still runs forward (2)
  and passes gradients back to its inputs (2) but computes no weight gradient (Hu et al. 2021, §4.2).
- **Your own factor** (FLOPs per parameter per token) replaces both terms: factor × parameters × tokens.
- **Model FLOPs vs hardware FLOPs.** Model FLOPs are what MFU is measured against. Hardware FLOPs add what
  activation recomputation repeats: full recomputation runs every layer's forward again, selective only the
  attention core (Korthikanti et al. 2022, §5–6); without a fused attention kernel the masked half of the
  score matrix is computed too. Time uses hardware FLOPs; MFU and HFU are both reported (PaLM appendix B).
- **Peak rate** is the dense datasheet rate at the training precision (NVIDIA's "with sparsity" figures are
  halved in data/gpus.csv); fp32 training uses TF32 tensor cores where the chip has them. A precision runs
  only on a chip that lists a rate for its datatype: fp8 on an A100 or bf16 on a V100 is refused, naming the
  precisions the chip runs, and the comparison and the plan search leave such chips out.
""")


def time() -> None:
    st.markdown("""
- **With your own MFU** (the seed's form) the measured utilisation already contains communication, pipeline
  idling and data loading, so wall clock = model FLOPs ÷ (GPUs × peak × MFU) and nothing is added:
  4.32e18 FLOPs on 4 GPUs at 400 TFLOP/s and MFU 0.3 take 9,000 s = 2.5 h.
- **Without one**, the compute comes from the operators each GPU runs (below); a bare parameter count,
  which has no shape to time, keeps a utilisation preset from data/efficiency.csv (by GPU generation, model
  size, method and precision, derived by scripts/derive_efficiency.py from published runs).
- **One step** = (compute + exposed tensor/context/pipeline traffic) ÷ (1 − bubble) + exposed data-parallel
  traffic. Traffic hides under compute up to the overlap share: exposed = traffic − overlap × min(compute,
  traffic), so full overlap costs the longer of the two and none their sum (Isaev et al. 2023, Calculon).
- **Traffic** uses ring collectives: an all-reduce moves 2(n−1)/n of the payload per GPU, an all-gather or
  reduce-scatter (n−1)/n (Patarasuk & Yuan 2009; nccl-tests). Data parallelism reduces gradients once per step
  (ZeRO-2 every micro-batch; ZeRO-3 also gathers weights before forward and backward, Rajbhandari et al. 2020
  §7). Tensor parallelism all-reduces activations four times per layer per micro-batch (Narayanan et al. 2021
  §3.2), context parallelism passes keys and values around a ring (Liu et al. 2023), pipelines pass one
  activation per micro-batch. A group inside one node runs at the GPU's link (NVLink, else PCIe at 88 % of
  its rated speed), a group across nodes at the network bandwidth per GPU.
- **LoRA and QLoRA also pay memory-bound work** that a FLOP count misses, added to the compute: QLoRA
  dequantises every 4-bit weight of the layers into a 16-bit copy in each forward and backward pass (and the
  recomputed forward), reading the NF4 value with its constants and writing 2 bytes; each adapter reads its
  input, writes its output and passes gradients back, about 3.5 × (input + output width) elements per token
  (1.5 forward, 2 backward). Both run at 80 % of the GPU's memory bandwidth (what coalesced streaming kernels
  reach). The Compute page shows the share per step.
- **Pipeline bubble** = (stages − 1) ÷ (interleaving × micro-batches + stages − 1) of each step
  (Narayanan et al. 2021, §2.2).
- **Wall clock** = steps × step time, plus checkpoint I/O when a storage speed is given: one load of the
  weights at the slower of storage and PCIe, and each save of weights + optimizer state, taken as blocking.
- **With failures** (planner/formulas/step/goodput.py): a failure stops the whole job. At a rate per GPU-hour
  (default 3.39e-5, Meta's RSC-1 record, Kokolis et al. 2025: 6.5 failures per 1,000 node-days) the job's
  mean time between failures is M = 1 ÷ (GPUs × rate). Checkpoints of C seconds (weights + optimizer state ÷
  the storage bandwidth, else 2 GB/s per node up to 57 GB/s) are written every τ of work, Daly's (2006)
  optimum √(2CM)·(1 + ⅓√(C/2M) + ⅑·C/2M) − C unless you set it (Young's 1974 √(2CM) to first order). Each
  failure redoes (τ + C) ÷ 2 of work on average and waits the restart plus a reload; so the wall clock with
  failures = (plain + writes) ÷ (1 − ((τ + C) ÷ 2 + restart + C) ÷ M). Rate 0 gives the plain figures.
  Published GPU-hours of whole runs are predicted with failures.
""")
    step_model()


def memory() -> None:
    st.markdown(f"""
- **Model states** are parameters × bytes per parameter of each component. Mixed-precision AdamW keeps
  16-bit weights (2) and gradients (2), an fp32 master copy (4) and two fp32 moments (8): 16 bytes
  (Rajbhandari et al. 2020, ZeRO §3.1). Pure bf16 drops the master and keeps bf16 moments; fp32 training
  needs no master. 8-bit AdamW stores its moments in about 2 bytes (Dettmers et al. 2022), SGD none, momentum one.
- **ZeRO / FSDP** shards over the data-parallel (× context-parallel) GPUs only, never the tensor or pipeline
  ranks: stage 1 the optimizer and master, stage 2 also gradients, stage 3 also weights, which are gathered
  layer by layer (that buffer is counted). Hybrid sharding shards within one node.
- **LoRA** keeps the frozen base as weights only; the adapters get the full recipe. **QLoRA** stores the
  base's linear layers in 4-bit NF4 with their quantisation constants, about 0.52 bytes per parameter with double
  quantisation (0.56 without), and keeps embeddings, norms and head in 16 bits (Dettmers et al. 2023).
- **Activations** follow Korthikanti et al. 2022 (Table 2): per layer and token, about 34 × hidden bytes in
  16-bit plus the attention scores, generalised to grouped-query attention, SwiGLU MLPs and no dropout. Flash
  attention never stores the score matrix, only fp32 softmax statistics (Dao et al. 2022). Tensor parallelism
  splits the attention and MLP interiors, sequence parallelism the rest; context parallelism splits the
  sequence. Selective recomputation drops the scores; full recomputation keeps each layer's input plus one
  layer's working set while it is rebuilt.
- **Logits and loss**: 16-bit logits plus three fp32 buffers per token and vocabulary entry at the loss's
  backward pass (14 bytes in bf16); a fused or chunked cross-entropy keeps little more than the logits.
- **The peak** is the larger of two moments: forward/backward (states + activations + logits, or gradients
  once they outgrow the freed activations; both when gradients are accumulated over micro-batches, which
  mixed precision keeps in fp32) and the optimizer step (states + an fp32 copy of the gradients the master
  update reads). With pipelines, the worse of the first stage (embedding, several micro-batches in flight)
  and the last (output head). Allocator slack ({_default("fragmentation_frac"):.0%} by default) and memory
  outside the allocator come on top: by default the CUDA context (0.75 GiB, measured on an H200), cuBLAS
  workspaces (2 × 32 MiB) and 256 MiB of NCCL buffers per parallel group spanning several GPUs; a stated
  framework overhead replaces that figure.
""")


def cost() -> None:
    st.markdown("""
- **Rate per GPU-hour.** Your quote, if entered, replaces everything and has no range. Otherwise the median
  on-demand price of the chosen dated snapshot (the newest by default; if it does not list the GPU, the most
  recent earlier one that does) less the pricing mode's typical discount.
- **Range**: cheapest provider × (1 − largest discount) to dearest provider × (1 − smallest discount),
  combined with the time range: the low cost is the fewest GPU-hours at the low rate, the high cost the most
  at the high rate.
- **Cost** = GPU-hours × rate × experiments multiplier (extra runs for search and failures); the seed's
  10 GPU-hours at \\$2 give \\$20.00. **Per million training tokens** is one run's cost ÷ training tokens × 10⁶.
""")
    modes = catalogs().pricing_modes.select(
        "mode", "discount_frac", "discount_frac_low", "discount_frac_high"
    )
    st.caption("Discounts off on-demand in use, as fractions (data/pricing_modes.csv):")
    small_table(modes)


def energy() -> None:
    st.markdown(f"""
- **GPU power** = TDP × (idle share + (1 − idle share) × how busy the GPU is):
  {_default("idle_power_frac"):.0%} of TDP at idle, rising linearly to TDP, {_default("gpu_util_frac"):.0%}
  busy by default (reference energy notes, A3). A GPU run at a **power limit** below its TDP (the sidebar's
  "Power limit per GPU (W)", or a capped catalogue variant) draws at the limit instead, and its clocks drop: the
  dense tensor rate becomes ((limit − 15 % of TDP) ÷ 85 % of TDP)^(1/1.5) of the datasheet's, so 600 W on a
  700 W H100 gives 88 %, within the 10–15 % loss published for transformer pre-training. Memory bandwidth stays.
- **Host** (CPUs, memory, network) adds {_default("host_overhead_frac"):.0%} of the GPU draw; the data centre
  multiplies both by its **PUE** ({_default("pue"):g} by default):
  energy = (GPU + host) × PUE, the form of Green Algorithms and Patterson et al. 2021. GPU-hours include the
  experiments multiplier, and the time range carries over to energy and carbon.
- **Carbon** = energy × the region's annual average grid intensity, location-based and life-cycle (Electricity
  Maps 2024 yearly data; the world average is Ember's 480 g/kWh). Renewable purchases are not subtracted.
- **Electricity cost** = energy × tariff, for on-premises runs only (cloud prices include power).
- Published model cards usually count GPU-hours × stated power × PUE, with no idle floor and no host share,
  so they usually come out lower than this model's for the same GPU-hours (reference energy notes, B9).
""")


def catalogues() -> None:
    cats = catalogs()
    st.markdown(
        "Every figure above reads these files. Rows from a team folder or your upload are counted apart."
    )
    small_table(catalogue_summary(cats))
    st.markdown("**Price snapshots** (dated; a snapshot is never edited, newer prices are a new file):")
    small_table(snapshot_table(cats.prices))
    for name, file_name, frame in catalogue_frames(cats):
        section = _lazy(f"Sources of {name} ({file_name})", f"methods.sources.{file_name}")
        if section.open:
            section.dataframe(sources_table(frame).to_arrow(), hide_index=True, width="stretch")


def _lazy(label: str, key: str, opened: bool = False) -> Any:
    """An expander whose content is drawn only while it is open: the page's big tables (every catalogue's
    sources, every calibration case) and the accuracy scoring (the planner run over every case three times)
    cost its first load seconds when drawn closed. `opened`: open it on arrival (a link to this section)."""
    if opened and key not in st.session_state:
        st.session_state[key] = True
    return st.expander(plain(label), key=key, on_change="rerun")


def accuracy() -> None:
    section = _lazy(
        "Scores against the published measurements", "methods.accuracy", requested_topic() == "accuracy"
    )
    if not section.open:
        return
    with section:
        _accuracy_scores()


def _accuracy_scores() -> None:
    report = accuracy_report()
    if isinstance(report, str):
        st.info(plain(report), icon=":material/info:")
        return
    st.markdown(
        "Each published measurement in data/calibration.csv is predicted from its configuration, through the "
        "same calculation as your plan, and compared with what was measured; error = predicted ÷ measured − 1. "
        "Rows that lack an input are skipped and say why. Three scores per category: on the **shipped "
        "presets** (what a plan gets; for throughput and time these presets were derived from the same rows, "
        "so the score is in-sample), with the presets rebuilt **without the row's whole source document** "
        "(source holdout), and **without the row alone** (row holdout). **For a setup of your own, trust the "
        "source-holdout figures**: your setup is a source the presets have not seen. Memory and energy use no "
        "presets fitted to their own rows, so their three scores agree."
    )
    st.dataframe(accuracy_summary_table(report).to_arrow(), hide_index=True, width="stretch")
    every = st.toggle("Every case", key="methods.every_case")
    if every:
        st.dataframe(accuracy_rows_table(report).to_arrow(), hide_index=True, width="stretch")


def version() -> None:
    cats = catalogs()
    chosen = scenario().snapshot or cats.latest_snapshot()
    team = team_data()
    lines = [
        f"- App version: **{plain(app_version())}**",
        f"- Price snapshot in use: **{plain(chosen)}**"
        + (" (the newest)" if not scenario().snapshot else ""),
        f"- GPU specs checked up to {plain(cats.gpus['as_of'].max())}; grid data version "
        f"{plain(cats.grid['as_of'].max())}",
        f"- Team folder: {plain(team.folder or 'none')}"
        + (f" — {plain(', '.join(team.files))}" if team.files else ""),
    ]
    if team.ignored:
        lines.append(f"- Files in the team folder that no catalogue reads: {plain(', '.join(team.ignored))}")
    for upload in session_uploads().values():
        lines.append(f"- {origin_markdown('upload')} {plain(upload.file_name)} (this browser session only)")
    st.markdown("\n".join(lines))


SECTIONS = {
    "tokens": tokens,
    "flops": flops,
    "time": time,
    "memory": memory,
    "cost": cost,
    "energy": energy,
    "post_training": post_training,
    "multimodal": multimodal,
    "catalogues": catalogues,
    "accuracy": accuracy,
    "version": version,
}

st.title("Methods & data")
team_error = team_data().error
if team_error:
    st.error(team_error_markdown(team_error), icon=":material/error:")
topic = requested_topic()
order = [topic, *(key for key in SECTIONS if key != topic)] if topic else list(SECTIONS)
if topic:
    st.caption(f"Shown first: {TOPICS[topic]}. The other sections follow.")
st.markdown(" · ".join(f"[{TOPICS[key]}](#{key})" for key in order))
for key in order:
    st.header(TOPICS[key], anchor=key, divider="gray")
    SECTIONS[key]()
