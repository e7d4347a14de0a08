"""One exam: its inputs (banks and runs through the format registries, the view scoring reads; inputs.py) and its
frozen plan (grader, tau, k, pool, measures; plan.py)."""
