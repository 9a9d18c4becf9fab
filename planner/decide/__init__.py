"""Decisions over many evaluated rows: the GPU comparison, what-if views (scaling, memory against micro-batch,
fixes for a plan that does not fit) and the plan search.
"""
