"""Every formula of the planner over plain numbers or numpy columns, grouped by what it computes:
`step` (tokens, FLOPs, the step's compute and communication, wall clock), `memory` (model states,
activations, the peak per GPU), `post_training` (the models beside the policy, rollout generation), `money`
(cost) and `energy` (energy, carbon, power caps); `units` holds the conversions. No catalogue lookups here:
`planner.resolve` turns a scenario into the numbers these take and `planner.evaluate` composes them.
"""
