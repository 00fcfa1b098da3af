"""rltriton: reinforcement-learning credit assignment as one associative scan.

Seven estimators (GAE, TD(lambda) returns, discounted returns, V-trace, Retrace(lambda),
eligibility traces, episodic prefix sums) share one first-order affine recurrence over the
time axis of ``[*B, T]`` rollouts, solved by fused Triton kernels on CUDA and a vectorised
torch path elsewhere. See SPEC.md / the docs for the exact boundary semantics.
"""

from rltriton import reference
from rltriton.assigner import CreditAssigner
from rltriton.estimators.gae import GAE, GAEResult, gae
from rltriton.estimators.retrace import Retrace, RetraceResult, retrace, retrace_from_action_values
from rltriton.estimators.td_lambda import DiscountedReturn, TDLambda, discounted_returns, td_lambda
from rltriton.estimators.traces import EligibilityTrace, EpisodicPrefixSum, eligibility_traces, episodic_prefix_sum
from rltriton.estimators.vtrace import VTrace, VTraceResult, vtrace

__version__ = "0.1.0"

__all__ = [
    "CreditAssigner",
    "DiscountedReturn",
    "EligibilityTrace",
    "EpisodicPrefixSum",
    "GAE",
    "GAEResult",
    "Retrace",
    "RetraceResult",
    "TDLambda",
    "VTrace",
    "VTraceResult",
    "discounted_returns",
    "eligibility_traces",
    "episodic_prefix_sum",
    "gae",
    "reference",
    "retrace",
    "retrace_from_action_values",
    "td_lambda",
    "vtrace",
]
