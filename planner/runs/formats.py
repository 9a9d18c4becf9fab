"""The console and metric-log lines of each trainer, as regular expressions over one line.

Each pattern follows the trainer's own format string at a pinned commit (cited beside it); a line that does
not match is skipped, so interleaved warnings, tqdm bars and other ranks' output do no harm. Memory units are
converted to GiB (2^30 bytes) by what the source divides by.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from planner.runs.summary import Summary

GIB_PER_MIB = 1 / 1024
PERCENT = 0.01
_NUM = r"([0-9][0-9,]*\.?[0-9]*(?:[eE][+-]?[0-9]+)?)"
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # torchtitan colours its line with ANSI escapes


def _num(text: str) -> float:
    return float(text.replace(",", ""))


# torchtitan, torchtitan/components/metrics.py (MetricsProcessor.log) at pytorch/torchtitan@c594d8ac89f0b850a8fc1443796916dfa6ab06b1:
#   f"step: {step:2}  loss: {loss:7.4f}  [grad_norm: {g:7.4f}  ]memory: {max_reserved_gib:5.2f}GiB({pct:.2f}%)
#     tps: {round(tps):,}  tflops: {tflops:,.2f}  mfu: {mfu:.2f}%"
# tps and tflops are per GPU (divided by the non-data-parallel size and by the elapsed time); memory is the
# device's max reserved since the last log, in GiB. Older releases print `wps:` and no tflops.
TITAN = re.compile(
    rf"step:\s*(\d+)\s+loss:.*?memory:\s*{_NUM}GiB\(.*?\)\s+(?:tps|wps):\s*{_NUM}"
    rf"(?:\s+tflops:\s*{_NUM})?\s+mfu:\s*{_NUM}%"
)


def titan_line(line: str, out: Summary) -> None:
    match = TITAN.search(ANSI.sub("", line))
    if match is None:
        return
    step, reserved, tps, tflops, mfu = match.groups()
    out.last("n_steps", float(step))
    out.peak("peak_reserved_gib", _num(reserved))
    out.rate("tokens_per_s_per_gpu", _num(tps))
    if tflops is not None:
        out.rate("tflops_per_gpu_model", _num(tflops))
    out.rate("mfu_frac", _num(mfu) * PERCENT)


# Megatron-LM, megatron/training/training.py (training_log) at NVIDIA/Megatron-LM@86df799dc4c78e4bd7fbae972b3ee743e8b14f02:
#   ' iteration {:8d}/{:8d} |' ... ' elapsed time per iteration (ms): {:.1f} |'
#   ' throughput per GPU (TFLOP/s/GPU): {:.1f} |' (when --log-throughput) ... ' global batch size: {:5d} |'
# and megatron/training/utils.py (report_memory), bytes divided by 1024*1024:
#   '[Rank {}] (after {} iterations) memory (MB) | allocated: {} | max allocated: {} | reserved: {} | max reserved: {}'
MEGATRON_STEP = re.compile(rf"iteration\s+(\d+)/\s*\d+\s*\|.*?elapsed time per iteration \(ms\):\s*{_NUM}")
MEGATRON_TFLOPS = re.compile(rf"throughput per GPU \(TFLOP/s/GPU\):\s*{_NUM}")
MEGATRON_MEMORY = re.compile(
    rf"memory \(MB\) \| allocated: {_NUM} \| max allocated: {_NUM} \| reserved: {_NUM} \| max reserved: {_NUM}"
)


def megatron_line(line: str, out: Summary) -> None:
    step = MEGATRON_STEP.search(line)
    if step is not None:
        out.last("n_steps", float(step.group(1)))
        out.rate("step_time_s", _num(step.group(2)) / 1000)
        tflops = MEGATRON_TFLOPS.search(line)
        if tflops is not None:
            out.rate("tflops_per_gpu_model", _num(tflops.group(1)))
        return
    memory = MEGATRON_MEMORY.search(line)
    if memory is not None:
        out.peak("peak_allocated_gib", _num(memory.group(2)) * GIB_PER_MIB)
        out.peak("peak_reserved_gib", _num(memory.group(4)) * GIB_PER_MIB)


# DeepSpeed, deepspeed/utils/timer.py (ThroughputTimer.stop) at deepspeedai/DeepSpeed@cb00352ef2de18e88e633e5f10e8d5b55c41f48c:
#   "epoch={}/micro_step={}/global_step={}, RunningAvgSamplesPerSec={}, CurrSamplesPerSec={},
#    MemAllocated={}GB, MaxMemAllocated={}GB" — samples are the engine's train_batch_size (all GPUs), memory is
# bytes / 1024**3; and deepspeed/runtime/utils.py (see_memory_usage): "MA {} GB  Max_MA {} GB  CA {} GB
# Max_CA {} GB" (CA: the caching allocator's reserved bytes), also / 1024**3; newer releases join the same four
# fields with " | " and add "NV {} GB" (the accelerator's view).
DEEPSPEED_TIMER = re.compile(
    rf"global_step=(\d+),\s*RunningAvgSamplesPerSec={_NUM},\s*CurrSamplesPerSec={_NUM},\s*"
    rf"MemAllocated={_NUM}GB,\s*MaxMemAllocated={_NUM}GB"
)
_SEP = r"\s*\|?\s*"  # white space (older releases) or " | " (newer ones)
DEEPSPEED_MEMORY = re.compile(rf"MA {_NUM} GB{_SEP}Max_MA {_NUM} GB{_SEP}CA {_NUM} GB{_SEP}Max_CA {_NUM} GB")


def deepspeed_line(line: str, out: Summary) -> None:
    timer = DEEPSPEED_TIMER.search(line)
    if timer is not None:
        out.last("n_steps", float(timer.group(1)))
        # the running average already excludes the timer's own start-up steps: its last value is the figure
        out.last("samples_per_s_total", _num(timer.group(2)))
        out.peak("peak_allocated_gib", _num(timer.group(5)))
        return
    memory = DEEPSPEED_MEMORY.search(line)
    if memory is not None:  # printed where the script calls see_memory_usage: the peak up to that point
        out.peak("peak_allocated_gib", _num(memory.group(2)))
        out.peak("peak_reserved_gib", _num(memory.group(4)))


# torchtune, torchtune/training/metric_logging.py (DiskLogger.log_dict) at pytorch/torchtune@9d571d913e1de5393f0876579aecf17b121c68df:
#   f"Step {step} | " then f"{name}:{data} " per metric. The recipes log tokens_per_second_per_gpu and, from
# torchtune/training/memory.py get_memory_stats (bytes / 1024**3), peak_memory_active, peak_memory_alloc and
# peak_memory_reserved in GiB.
TUNE_STEP = re.compile(r"^Step (\d+) \| (.*)$")
TUNE_KEYS = {
    "tokens_per_second_per_gpu": ("rate", "tokens_per_s_per_gpu"),
    "peak_memory_active": ("peak", "peak_active_gib"),
    "peak_memory_alloc": ("peak", "peak_allocated_gib"),
    "peak_memory_reserved": ("peak", "peak_reserved_gib"),
}


def torchtune_line(line: str, out: Summary) -> None:
    match = TUNE_STEP.match(line.strip())
    if match is None:
        return
    out.last("n_steps", float(match.group(1)))
    for item in match.group(2).split():
        name, _, value = item.partition(":")
        if name in TUNE_KEYS:
            kind, key = TUNE_KEYS[name]
            (out.rate if kind == "rate" else out.peak)(key, float(value))


@dataclass(frozen=True)
class LineFormat:
    name: str
    signatures: tuple[re.Pattern[str], ...]  # lines that only this trainer prints
    parse: Callable[[str, Summary], None]


LINE_FORMATS = (
    LineFormat("torchtitan", (TITAN,), titan_line),
    LineFormat("megatron", (MEGATRON_STEP, MEGATRON_MEMORY), megatron_line),
    LineFormat("deepspeed", (DEEPSPEED_TIMER, DEEPSPEED_MEMORY), deepspeed_line),
    LineFormat("torchtune", (TUNE_STEP,), torchtune_line),
)
