"""Embeddings: projections (PCA, t-SNE, UMAP), quality, alignment over training, findings."""
