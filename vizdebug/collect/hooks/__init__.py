"""The hook engine: forward/backward hooks on the watched model, the step clock, sampling,
and the fast paths that reduce sampled activations and gradients into typed records."""
