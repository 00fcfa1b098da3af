"""Adapters to the tools RL people already use (installed as ``rltriton.adapters``).

* :mod:`rltriton.adapters.tensordict` -- the TensorDict path behind ``rt.GAE(gamma, lam)(td)``
  for every estimator, with TorchRL's keys (``"state_value"``, ``("next", "reward")``, ...).
* :mod:`rltriton.adapters.torchrl` -- drop-in subclasses of TorchRL's ``GAE``,
  ``TD1Estimator``, ``TDLambdaEstimator`` and ``VTrace`` (and its functionals) computed by
  rltriton; needs ``torchrl``.
* :mod:`rltriton.adapters.cleanrl` -- ``compute_gae(rewards, values, dones, next_value,
  next_done, gamma, gae_lambda)`` on CleanRL's time-major buffers, truncation-aware variants,
  returns / TD(lambda) / V-trace counterparts.

See ``docs/adapters.md`` for the one-line switch-over and the differences. The core package
never imports these modules at import time; ``CreditAssigner`` calls
:mod:`rltriton.adapters.tensordict` on first use of its TensorDict entry point.
"""
