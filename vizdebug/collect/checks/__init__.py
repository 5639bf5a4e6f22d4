"""Hook-time checks: what reaches the loss, the optimizer's protocol, eval passes, ``None``
inputs and the anomaly policy. They emit typed observations; the verdicts (message,
severity, hint) are written in :mod:`vizdebug.analysis`."""
