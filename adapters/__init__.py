"""Adapters to the tools RL people already use (installed as ``rltriton.adapters``).

The core package never imports these modules at import time; ``CreditAssigner`` calls
:mod:`rltriton.adapters.tensordict` on first use of its TensorDict entry point.
"""
