"""The hook engine: forward/backward hooks on the watched model, the step clock, sampling,
and the fast paths that reduce sampled activations and gradients into typed records.

:class:`~.engine.ModelHooks` attaches and detaches the hooks and holds the closures; the
state is owned by a few objects, each with one job:

- :class:`~.clock.StepClock`: which training step runs (counted by the model's optimizer,
  or by forward passes until one steps);
- :class:`~.sampling.StepSampler`: whether a step is sampled (``every``, or ``"auto"``'s
  time budget);
- :class:`~.outputs.OutputCollector`: the sampled step's module outputs, reduced together
  when the forward pass ends;
- :class:`~.gradients.GradientCollector`: gradient and weight norms, read at the end of
  backward, and the cache of the weights' numpy views;
- :class:`~.pending.PendingSteps`: the sealed steps not read yet, and their batched read
  into the sample buffers (``activations``, ``grads``);
- :class:`~vizdebug.collect.checks.crash.CrashNamer`: which module received ``None``, also
  after a crash;
- :class:`~vizdebug.collect.checks.losses.LossWatch` and
  :class:`~vizdebug.collect.checks.optimizer.OptimizerChecks`: what reaches the loss, and
  the optimizer's state, on sampled steps;
- :class:`~.param_hooks.ParamHooks`: the gradient hooks of the parameters that exist (a lazy
  module's once its first forward made them) and their sizes.
"""
