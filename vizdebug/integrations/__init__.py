"""Callbacks for the frameworks people already train with (optional extras).

- :mod:`vizdebug.integrations.lightning`: ``VizdebugCallback`` for PyTorch Lightning
  (``pip install vizdebug[lightning]``).
- :mod:`vizdebug.integrations.transformers`: ``VizdebugCallback`` for the Hugging Face
  ``Trainer`` (``pip install vizdebug[transformers]``).

Both are thin: they call :func:`vizdebug.watch` when training starts, log what the
framework computes through :meth:`vizdebug.Session.log`, and close the session when
training ends. Importing this package imports neither framework.
"""
