"""Data, splits and predictions: image statistics, batch and dataset checks, leakage
between splits, metrics that lie, top losses."""
