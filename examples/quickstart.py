"""Every estimator on one random rollout, each backend checked against the float64 oracle.

    python examples/quickstart.py [--envs 64] [--steps 256] [--device cpu|cuda]

Prints, per estimator and backend, the largest absolute difference from ``rt.reference``
and the time of one call. Uses Triton on CUDA when a GPU is present (``--device cuda``),
the vectorised torch backend everywhere.
"""

from __future__ import annotations

import argparse
import time

import torch

import rltriton as rt


def rollout(n: int, t: int, device: str, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    term = torch.rand(n, t, generator=g) < 0.02
    trunc = (torch.rand(n, t, generator=g) < 0.01) & ~term
    data = {
        "rewards": torch.randn(n, t, generator=g),
        "values": torch.randn(n, t, generator=g),
        "log_rhos": 0.3 * torch.randn(n, t, generator=g),
        "bootstrap_values": torch.randn(n, t, generator=g),
        "action_values": torch.randn(n, t, 4, generator=g),
        "target_probs": torch.softmax(torch.randn(n, t, 4, generator=g), -1),
        "actions": torch.randint(0, 4, (n, t), generator=g),
        "behavior_log_probs": torch.log(torch.full((n, t), 0.25)),
        "terminated": term,
        "truncated": trunc,
    }
    return {k: v.to(device) for k, v in data.items()}


def calls(d: dict[str, torch.Tensor]) -> dict[str, object]:
    flags = dict(terminated=d["terminated"], truncated=d["truncated"], bootstrap_values=d["bootstrap_values"])
    r, v = d["rewards"], d["values"]
    return {
        "gae": lambda b: rt.gae(r, v, gamma=0.99, lam=0.95, **flags, backend=b),
        "td_lambda": lambda b: rt.td_lambda(r, v, gamma=0.99, lam=0.95, **flags, backend=b),
        "discounted_returns": lambda b: rt.discounted_returns(r, gamma=0.99, **flags, backend=b),
        "vtrace": lambda b: rt.vtrace(r, v, d["log_rhos"], gamma=0.99, **flags, backend=b),
        "retrace": lambda b: rt.retrace(r, v, v, d["log_rhos"], gamma=0.99, lam=0.9, **flags, backend=b),
        "retrace_from_action_values": lambda b: rt.retrace_from_action_values(
            r, d["action_values"], d["target_probs"], d["actions"], d["behavior_log_probs"], gamma=0.99,
            lam=0.9, terminated=d["terminated"], truncated=d["truncated"],
            bootstrap_values=d["bootstrap_values"], backend=b,
        ),
        "eligibility_traces": lambda b: rt.eligibility_traces(
            r, gamma=0.99, lam=0.9, dones=d["terminated"] | d["truncated"], backend=b
        ),
        "episodic_prefix_sum": lambda b: rt.episodic_prefix_sum(r, d["terminated"] | d["truncated"], backend=b),
    }


def timed(fn, backend: str, device: str) -> tuple[tuple[torch.Tensor, ...], float]:
    out = fn(backend)
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn(backend)
    if device == "cuda":
        torch.cuda.synchronize()
    return (tuple(out) if isinstance(out, tuple) else (out,)), time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--envs", type=int, default=64)
    ap.add_argument("--steps", type=int, default=256)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    d = rollout(args.envs, args.steps, args.device)
    backends = ["torch"] + (["triton"] if args.device == "cuda" else [])
    print(f"rollout {args.envs} envs x {args.steps} steps on {args.device}; error vs float64 reference")
    print(f"{'estimator':<28} {'backend':<8} {'max |err|':>10} {'time ms':>9}")
    worst = 0.0
    for name, fn in calls(d).items():
        ref, _ = timed(fn, "reference", args.device)
        for b in backends:
            out, dt = timed(fn, b, args.device)
            err = max(float((o.double() - r.double()).abs().max()) for o, r in zip(out, ref))
            worst = max(worst, err)
            print(f"{name:<28} {b:<8} {err:10.2e} {dt * 1e3:9.3f}")
    print(f"largest error over all estimators and backends: {worst:.2e} (float32 arithmetic)")


if __name__ == "__main__":
    main()
