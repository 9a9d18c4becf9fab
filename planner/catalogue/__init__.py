"""The facts the planner looks up: catalogue schemas, reading and checking the CSV files in data/, the team
overlay and session uploads, name lookup, model presets and the compute-efficiency presets.
"""
