"""The operator-level step model: each GPU's share of a micro-batch as the kernels it runs.

`gemm` (matrix multiplies at their real shapes: tile and wave quantisation, roofline for thin shapes),
`attention` (the fused attention kernel's rate by sequence and head dim, or the unfused path), `memory_bound`
(norms, residuals, activations, rotary, the loss, fp8 casts, the optimizer step at achievable memory bandwidth),
`dispatch` (the host's launch cost per kernel: each pass takes at least its dispatch time) and `step` (the
composition per optimizer step from `planner.columns.Columns`, what `planner.evaluate` calls).
"""
