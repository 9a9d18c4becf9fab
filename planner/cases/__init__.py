"""Published measurements (case files): each row becomes a Scenario and is predicted through the same
resolve -> evaluate path as a user's plan, then scored (`python -m planner validate`).
"""
