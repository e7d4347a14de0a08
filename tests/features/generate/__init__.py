"""Tests of the bank generation feature (exam_harness/features/generate)."""
