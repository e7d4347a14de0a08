"""The grading pass (passes.py) and what serves it: one set-up for both front ends (setup.py), the grade
cache (cache.py), batch jobs (batches.py) and the merge of shards' caches (merge.py)."""
