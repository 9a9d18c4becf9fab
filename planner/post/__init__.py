"""Post-training: DPO and its relatives, reward models, PPO and GRPO, composed from `Columns`.

- `group`: the post-training column group of `planner.columns.Columns`;
- `columns`: builds it from a Scenario, deciding each objective's defaults in one place;
- `step`: what `planner.evaluate` runs (the policy's view, the other models, rollouts, memory phases);
- `outputs`: the figures an estimate reports.
The formulas are in `planner.formulas.post_training.side_models` and `planner.formulas.post_training.generation`.
"""
