"""What a user gives the planner: the Scenario (every input of one plan, validated and frozen), the share-link
query, saved scenario sets and their CSV form, and the messages for rejected input.
"""
