"""The built-in sections of the result document, one module each (exam_harness/results/sections.py)."""
