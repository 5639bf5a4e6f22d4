"""What vizdebug does not handle yet, entry by entry, as measured (``python -m
tests.corpus.run``). ``tests/test_corpus.py`` marks these entries ``xfail``:

- ``GAPS``: strict. The entry fails the same way on every run; the day it passes, its
  test fails and the line here must go (and the table in the README be measured again).
- ``FLAKY``: not strict. The outcome depends on the machine's timing (the loader tap's
  wall-clock waiting, or which steps ``every="auto"`` samples), so it passes on some runs
  and fails on others; the reason says how often it failed when measured.

Each reason says what the entry waits for and what vizdebug said instead.
"""

from __future__ import annotations

GAPS: dict[str, str] = {
    # -- faults vizdebug does not name yet ------------------------------------------------
    "log-softmax-into-cross-entropy": "loss-output-mismatch is said at info level only: "
                                      "log_softmax is idempotent, so the run trains exactly "
                                      "like its twin and a warning would accuse working code",
    # -- held-out faults (heldout_faults.py) that the rules of this round do not name ------
    "heldout/augmented-before-split": "check_split says nothing: glyphs augmented 3x "
                                      "(noise, blur, one-pixel shift) before the split put "
                                      "siblings on both sides alike, so the training split's "
                                      "own nearest-neighbour distances (the near-copy rule's "
                                      "reference) hold the same siblings (median test->train "
                                      "0.81 vs train->train 0.80; the twin, augmenting the "
                                      "training split only, 1.02 vs 0.63), and a shifted copy "
                                      "lies about as far as the nearest other glyph",
    # -- held-out faults, second round (heldout_faults2.py), not named this round ----------
    "heldout2/one-cycle-stepped-per-epoch": "missed: OneCycleLR(epochs=8, steps_per_epoch="
                                            "22) stepped once per epoch moved the rate "
                                            "from 4.0e-4 to 9.5e-4 of its max_lr 1e-2 in 8 "
                                            "epochs (val_acc 0.913 against the twin's "
                                            "0.984). The optimizer's groups hold max_lr and "
                                            "initial_lr, not the scheduler's total_steps nor "
                                            "how often it steps; OneCycleLR(total_steps="
                                            "176) stepped per epoch (pytorch#65417's "
                                            "workaround), 8 epochs into a 176-epoch run, "
                                            "draws the same rate trace, so the trace cannot "
                                            "tell them apart without the scheduler object, "
                                            "which no collector sees",
    # -- held-out working programs, second round (public_e.py) still accused -------------
    "public/examples-actor-critic": "unstable-loss (17% of steps spike above 2x the running "
                                    "median): the loss is a sum over the episode's steps "
                                    "(actor and critic terms), so it grows with the episodes "
                                    "the policy learns to lengthen (12.7 -> 34.5 as they go "
                                    "from ~20 to 200 steps) and spikes on long ones; the "
                                    "profile does not know how many forward passes a logged "
                                    "loss sums (the program tap reads inputs at sampled "
                                    "steps only)",
    "public/tutorials-qat": "unstable-loss (15% of steps spike above 2x the running median): "
                            "quantization-aware fine-tuning of a trained classifier, "
                            "per-batch cross-entropy near its floor (median 0.048), where "
                            "one wrong sample in a batch of 30 doubles it; the spike margin "
                            "(a tenth of the first loss, here already the trained one, or "
                            "of ln 2: still 9% of steps) does not tell that from instability",
}

FLAKY: dict[str, str] = {
    "rnn-exploding-without-clipping/twin": "sampling: 'exploding-gradients' on the clipped "
                                           "run in 1 of 4 runs (which steps every='auto' "
                                           "samples depends on timing)",
}
