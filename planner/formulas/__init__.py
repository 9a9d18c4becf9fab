"""Every formula of the planner over plain numbers or numpy columns: compute (tokens, FLOPs), communication,
timing, memory (activations, model states, recipes), cost, energy and units. No catalogue lookups here:
`planner.resolve` turns a scenario into the numbers these take and `planner.evaluate` composes them.
"""
