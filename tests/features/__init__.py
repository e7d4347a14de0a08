"""Tests of exam_harness/features/."""
