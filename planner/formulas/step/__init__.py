"""Step time: tokens and FLOPs, the compute and communication of one optimizer step, pipeline schedules, offload, expert parallelism, and the run's wall clock with failures."""
