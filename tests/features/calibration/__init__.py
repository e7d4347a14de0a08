"""Tests of the calibration feature (exam_harness/features/calibration/)."""
