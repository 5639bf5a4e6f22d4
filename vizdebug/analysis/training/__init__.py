"""Training rules: the training profile and every diagnosis of a run's records."""
