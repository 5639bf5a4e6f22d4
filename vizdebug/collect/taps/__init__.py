"""Collectors beside the model: the loader tap, the system sampler, the scalar log, tracked
embeddings and their probe."""
