"""Drift between a reference and a current dataset: tests, sketches, time windows, findings."""
