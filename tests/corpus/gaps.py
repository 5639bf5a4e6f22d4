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

_NOT_WIRED = ("loss-output-mismatch is not produced by watch(): the loss checks "
              "(analysis/loss_checks, LossWatch) exist but are not wired into watch() yet")

GAPS: dict[str, str] = {
    # -- faults: the code does not exist yet, or is not produced by watch() -------------
    "softmax-before-cross-entropy": f"{_NOT_WIRED}; today only 'underfitting [loss]'",
    "softmax-twice-functional": f"{_NOT_WIRED} (functional F.nll_loss path); today nothing",
    "log-softmax-into-cross-entropy": f"{_NOT_WIRED}; harmless in value, so nothing else "
                                      "is said either",
    "softmax-into-nll-loss": f"{_NOT_WIRED}; the loss is negative from step 0 and nothing "
                             "is said",
    "sigmoid-before-bce-with-logits": f"{_NOT_WIRED}; today nothing",
    "bce-loss-without-sigmoid": "loss-output-mismatch: BCELoss on raw scores raises 'all "
                                "elements of input should be between 0 and 1' at the first "
                                "step and vizdebug says nothing about it",
    "sigmoid-output-unbounded-targets": f"{_NOT_WIRED}; today only 'underfitting [loss]'",
    "mse-target-broadcast": "target-shape-broadcast is not produced by watch() (MSELoss of "
                            "(N, 1) against (N,)); today nothing",
    "squeezed-output-target-broadcast": "target-shape-broadcast is not produced by watch() "
                                        "(L1Loss of (N,) against (N, 1)); today only "
                                        "'underfitting [loss]'",
    "labels-start-at-one": "labels-out-of-range: cross_entropy raises 'Target 10 is out of "
                           "bounds' at the first step and vizdebug says nothing about it",
    "greyscale-mask-as-class-ids": "labels-out-of-range: cross_entropy raises 'Target 255 is "
                                   "out of bounds' at the first step and vizdebug says "
                                   "nothing about it",
    "missing-zero-grad": "missing-zero-grad is not a code yet; today 'dead-units [2]', "
                         "'underfitting [loss]', 'unstable-loss [loss]' (the consequences)",
    "zero-grad-only-on-one-path": "missing-zero-grad is not a code yet; today only "
                                  "'unstable-loss [loss]'",
    "eval-mode-left-on-after-validation": "train-eval-mode is not a code yet (optimizer steps "
                                          "taken with the model in eval mode); today nothing",
    "validation-in-train-mode": "train-eval-mode is not a code yet (val_* logged from "
                                "forward passes in train mode, BatchNorm on single "
                                "samples); today nothing",
    "functional-dropout-always-on": "train-eval-mode is not a code yet (F.dropout(..., "
                                    "training=True) active during validation); today nothing",
    "scheduler-stepped-every-batch": "lr-schedule-collapse is not a code yet (StepLR stepped "
                                     "per batch, lr ~0 after a few epochs); today only "
                                     "'underfitting [loss]'",
    "layers-in-plain-list": "parameters-not-updated: layers kept in a plain list are not "
                            "registered modules, so no hook sees them and the optimizer "
                            "never gets them; today nothing",
    "loss-rebuilt-from-item": "zero-gradients: the loss is a fresh leaf, every parameter's "
                              "grad stays None (no hook fires); today only "
                              "'underfitting [loss]' with a hint about step()",
    "relu-on-regression-output": "loss-output-mismatch (a ReLU output for targets that are "
                                 "negative half the time) is not produced by watch(); today "
                                 "'zero-gradients' and 'dead-units [out]'",
    "nan-in-targets": "input-nonfinite for NaN regression targets is not produced by watch(); "
                      "today 'nonfinite-activation [0]' (whose hint blames the input data, "
                      "though the NaN came back through the weights) and 'nonfinite-loss'",
    "features-not-scaled": "input-not-normalized covers images only: check_batch on a table "
                           "whose columns differ by 1e6 in scale says nothing; watch says "
                           "'exploding-gradients [loss]' (loss 1.4e5 at step 0)",
    # -- false alarms on working programs ------------------------------------------------
    "mse-target-broadcast/twin": "false alarm 'unstable-loss [loss]': ordinary batch-16 "
                                 "regression noise (val_loss falls to 0.17)",
    "overfitting-small-dataset/twin": "false alarm 'overfitting [val_loss]' for a rise "
                                      "0.104 -> 0.12 at 97% accuracy, and 'unstable-loss "
                                      "[loss]' (6% spikes) on a batch-32 Adam run",
    "imbalanced-majority-only/twin": "false alarm 'misleading-accuracy': the class-weighted "
                                     "model has 76% balanced accuracy and is right on both "
                                     "classes; its accuracy (77%) is below the majority "
                                     "rate, which the rule reads as 'close to' it",
    "control/wine-full-batch-tensors": "false alarm 'overfitting [val_loss]': 0.183 -> 0.217 "
                                       "on 45 validation rows at 91-96% accuracy, with weight "
                                       "decay (noise-level rise)",
}

FLAKY: dict[str, str] = {
    "control/regression-full-batch-loader": "timing: 'input-bound' on a full-batch, "
                                            "in-memory loop (200 epochs, ~0.6 s of waiting "
                                            "when idle, over the 1 s floor when the machine "
                                            "is loaded); failed 6 of 7 runs",
    "labels-scaled-by-to-tensor/twin": "timing: 'input-bound' (~0.85 s of waiting over 132 "
                                       "batches of an in-memory Dataset, over the 1 s floor "
                                       "when the machine is loaded); failed 1 of 7 runs",
    "rnn-exploding-without-clipping/twin": "sampling: 'exploding-gradients' on the clipped "
                                           "run in 1 of 4 runs (which steps every='auto' "
                                           "samples depends on timing)",
}
