"""IMPALA-style actor-learner with a lagging actor, corrected by V-trace (rltriton).

    python examples/impala_vtrace.py                        # CartPole-v1, actor lags the learner by 16 updates
    python examples/impala_vtrace.py --no-correction        # same stale data, plain policy gradient
    python examples/impala_vtrace.py --lag 0                # on-policy actor-critic (V-trace = n-step returns)

In IMPALA (Espeholt et al. 2018) actors run a copy of the policy that is a few learner
updates old, so the learner trains on data from a behaviour policy mu that is not its own
policy pi. Here that is made exact and controllable: the actor that collects update u's
rollout uses the learner's parameters from update ``u - lag``. The learner then takes one
gradient step on

    policy:  -advantages * log pi(a_t|s_t)       (advantages from V-trace, no gradient)
    value:   0.5 * (vs_t - V(s_t))^2
    entropy: -ent_coef * H(pi(.|s_t))

with ``vs, advantages = rt.vtrace(rewards, V, log_rhos = log pi - log mu, ...)``: truncated
importance weights rho_t = min(1, pi/mu) and traces c_t = min(1, pi/mu) correct the stale
data. ``--no-correction`` sets ``log_rhos = 0``: the stale data is used as if it were
on-policy (n-step returns of mu and the plain policy gradient), which is what an actor-critic
without off-policy correction does; it learns worse, and worse the longer the lag.

Time limits: as in ``ppo_cleanrl.py`` (``autoreset_mode=SAME_STEP``): a time-limit step is
``truncated`` and bootstraps from ``V(infos["final_obs"])`` via ``bootstrap_values``; V-trace
then cuts both the trace and the advantage's ``vs_{t+1}`` there (the advantage bootstraps
from that value, never from the next episode). ``--truncation-as-death`` treats it as a
termination instead.
"""

from __future__ import annotations

import argparse
import collections
import copy
import csv
import random
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from torch.distributions import Categorical
from tqdm import tqdm

import rltriton as rt


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--env-id", default="CartPole-v1", help="any Gymnasium id with a Discrete action space")
    p.add_argument("--total-timesteps", type=int, default=300_000)
    p.add_argument("--lag", type=int, default=16, help="the actor's policy is this many learner updates old")
    p.add_argument("--no-correction", action="store_true",
                   help="no V-trace correction (log_rhos = 0): plain policy gradient on the stale data")
    p.add_argument("--max-episode-steps", type=int, default=None, help="override the env's time limit")
    p.add_argument("--truncation-as-death", action="store_true",
                   help="treat a time limit as a termination (no bootstrap), as CleanRL does")
    p.add_argument("--async-envs", action="store_true", help="AsyncVectorEnv (one process per env) instead of Sync")
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--num-steps", type=int, default=32, help="rollout length per env and update")
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--lam", type=float, default=1.0, help="V-trace lambda (rlax's; 1 = the paper's V-trace)")
    p.add_argument("--rho-bar", type=float, default=1.0)
    p.add_argument("--c-bar", type=float, default=1.0)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="cpu", help="cpu or cuda (rltriton runs its Triton kernel on CUDA)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is fastest for these tiny nets)")
    p.add_argument("--csv", default=None, help="episode log (default runs/impala_<env>_s<seed>.csv)")
    p.add_argument("--plot", default=None, help="save a learning-curve PNG here (needs matplotlib)")
    p.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    return p.parse_args(argv)


def make_env(env_id: str, max_episode_steps: int | None):
    def thunk():
        env = gym.make(env_id, max_episode_steps=max_episode_steps)
        return gym.wrappers.RecordEpisodeStatistics(env)

    return thunk


def layer_init(layer: nn.Linear, std: float = np.sqrt(2), bias: float = 0.0) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim: int, n_actions: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, n_actions), std=0.01),
        )

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x).squeeze(-1)

    def dist(self, x: torch.Tensor) -> Categorical:
        return Categorical(logits=self.actor(x))


def finished_episodes(infos: dict) -> list[tuple[int, float, int]]:
    """(env, return, length) of the episodes that ended at this step, from RecordEpisodeStatistics.
    Under SAME_STEP the finished episode's info sits in ``infos["final_info"]``."""
    info = infos.get("final_info", infos)
    if "_episode" not in info:
        return []
    ep = info["episode"]
    return [(int(i), float(ep["r"][i]), int(ep["l"][i])) for i in np.nonzero(info["_episode"])[0]]


def save_plot(rows: list[tuple], path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.array([r[0] for r in rows])
    rets = np.array([r[2] for r in rows])
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.scatter(steps, rets, s=4, alpha=0.3, label="episode return")
    if len(rets) >= 20:
        ax.plot(steps[19:], np.convolve(rets, np.ones(20) / 20, mode="valid"), color="C1", label="mean of last 20")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episode return")
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None) -> dict:
    args = parse_args(argv)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)

    thunks = [make_env(args.env_id, args.max_episode_steps) for _ in range(args.num_envs)]
    VecEnv = AsyncVectorEnv if args.async_envs else SyncVectorEnv
    envs = VecEnv(thunks, autoreset_mode=AutoresetMode.SAME_STEP)  # final obs in infos["final_obs"]
    assert isinstance(envs.single_action_space, gym.spaces.Discrete), "only discrete action spaces are supported"
    time_limit = envs.get_attr("spec")[0].max_episode_steps

    obs_dim = int(np.prod(envs.single_observation_space.shape))
    learner = Agent(obs_dim, int(envs.single_action_space.n)).to(device)
    actor = copy.deepcopy(learner)  # the behaviour policy mu: the learner as it was `lag` updates ago
    optimizer = torch.optim.Adam(learner.parameters(), lr=args.learning_rate, eps=1e-5)
    # Parameter snapshots of the last lag+1 learner updates; the oldest one drives the actor.
    snapshots = collections.deque([copy.deepcopy(learner.state_dict())], maxlen=args.lag + 1)

    T, N = args.num_steps, args.num_envs
    num_updates = max(1, args.total_timesteps // (T * N))

    obs = torch.zeros((T, N, obs_dim), device=device)
    actions = torch.zeros((T, N), dtype=torch.long, device=device)
    behaviour_logprobs = torch.zeros((T, N), device=device)
    rewards = torch.zeros((T, N), device=device)
    terminated = torch.zeros((T, N), dtype=torch.bool, device=device)
    truncated = torch.zeros((T, N), dtype=torch.bool, device=device)
    final_obs = torch.zeros((T, N, obs_dim), device=device)  # s_{t+1} where obs[t+1] is not it

    csv_path = Path(args.csv or f"runs/impala_{args.env_id}_s{args.seed}.csv")
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    csv_file = open(csv_path, "w", newline="")
    log = csv.writer(csv_file)
    log.writerow(["global_step", "env", "episode_return", "episode_length", "truncated"])
    episodes: list[tuple] = []

    global_step, start = 0, time.time()
    rho_mean, rho_clipped = [], []
    next_obs = torch.as_tensor(envs.reset(seed=args.seed)[0], dtype=torch.float32, device=device)
    name = "impala" + (" (no correction)" if args.no_correction else " (v-trace)")
    bar = tqdm(range(1, num_updates + 1), desc=f"{name} {args.env_id}", unit="update", disable=args.no_progress)
    for _update in bar:
        # --- actor: collect T steps with the stale policy mu -------------------------------
        actor.load_state_dict(snapshots[0])
        for t in range(T):
            global_step += N
            obs[t] = next_obs
            with torch.no_grad():
                dist = actor.dist(next_obs)
                action = dist.sample()
            actions[t], behaviour_logprobs[t] = action, dist.log_prob(action)

            next_obs_np, reward, term, trunc, infos = envs.step(action.cpu().numpy())
            rewards[t] = torch.as_tensor(reward, dtype=torch.float32, device=device)
            cut_by_limit = trunc & ~term  # a step both terminal and at the limit is terminal
            limit = cut_by_limit
            if args.truncation_as_death:
                term, limit = term | trunc, np.zeros_like(trunc)
            terminated[t] = torch.as_tensor(term, device=device)
            truncated[t] = torch.as_tensor(limit, device=device)
            next_obs = torch.as_tensor(next_obs_np, dtype=torch.float32, device=device)
            final_obs[t] = next_obs
            if limit.any():  # SAME_STEP: next_obs starts the next episode; the cut-off state is in infos
                idx = np.nonzero(limit)[0]
                final_obs[t, torch.as_tensor(idx, device=device)] = torch.as_tensor(
                    np.stack(infos["final_obs"][idx]), dtype=torch.float32, device=device)

            for env_i, ep_ret, ep_len in finished_episodes(infos):
                row = (global_step, env_i, ep_ret, ep_len, int(cut_by_limit[env_i]))
                log.writerow(row)
                episodes.append(row)

        # --- learner: one gradient step on the stale rollout --------------------------------
        dist = learner.dist(obs)
        logprobs = dist.log_prob(actions)
        values = learner.get_value(obs)
        with torch.no_grad():
            # bootstrap_values is read at truncated steps (V of the cut-off state) and at T-1
            # (V of the state the next rollout starts from, or of the cut-off state).
            bootstrap = learner.get_value(final_obs)
            log_rhos = logprobs - behaviour_logprobs
            if args.no_correction:
                log_rhos = torch.zeros_like(log_rhos)
            vs, pg_adv = rt.vtrace(
                rewards, values, log_rhos, gamma=args.gamma, lam=args.lam, rho_bar=args.rho_bar, c_bar=args.c_bar,
                terminated=terminated, truncated=truncated, bootstrap_values=bootstrap, time_dim=0,
            )
            rho = (logprobs - behaviour_logprobs).exp()
            rho_mean.append(rho.mean().item())
            rho_clipped.append((rho > args.rho_bar).float().mean().item())

        pg_loss = -(pg_adv * logprobs).mean()
        v_loss = 0.5 * ((vs - values) ** 2).mean()
        loss = pg_loss + args.vf_coef * v_loss - args.ent_coef * dist.entropy().mean()
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(learner.parameters(), args.max_grad_norm)
        optimizer.step()
        snapshots.append(copy.deepcopy(learner.state_dict()))

        csv_file.flush()
        recent = [r[2] for r in episodes[-20:]]
        bar.set_postfix(step=global_step, ret20=f"{np.mean(recent):.1f}" if recent else "-",
                        rho=f"{rho_mean[-1]:.2f}", clipped=f"{rho_clipped[-1]:.2f}")

    envs.close()
    csv_file.close()
    elapsed = time.time() - start
    if args.plot:
        mode = "no correction" if args.no_correction else "V-trace"
        save_plot(episodes, args.plot, f"IMPALA {args.env_id}, actor lag {args.lag} updates, {mode}")

    last20 = np.array([r[2] for r in episodes[-20:]]) if episodes else np.array([np.nan])
    summary = {
        "env": args.env_id, "steps": global_step, "seconds": elapsed, "episodes": len(episodes),
        "last20_mean": float(last20.mean()),
        "mean_return": float(np.mean([r[2] for r in episodes])) if episodes else float("nan"),
    }
    limits = "treated as termination" if args.truncation_as_death else "bootstrapped from V(final obs)"
    print(f"\n== impala_vtrace summary ==\n"
          f"env            {args.env_id}, time limit {time_limit}, {VecEnv.__name__} x{N}, SAME_STEP autoreset\n"
          f"off-policy     actor lags the learner by {args.lag} updates; "
          f"{'NO correction (log_rhos = 0)' if args.no_correction else 'V-trace correction'}; "
          f"mean pi/mu {np.mean(rho_mean):.3f}, clipped at rho_bar {100 * np.mean(rho_clipped):.1f}% of steps\n"
          f"time limits    {limits}\n"
          f"steps          {global_step:,} in {elapsed:.1f} s ({global_step / elapsed:,.0f} steps/s), "
          f"{num_updates} updates\n"
          f"episodes       {len(episodes)} ({sum(r[4] for r in episodes)} cut by the time limit)\n"
          f"return         last 20: {last20.mean():.1f} +- {last20.std():.1f}; "
          f"all episodes: {summary['mean_return']:.1f}\n"
          f"csv            {csv_path}" + (f"\nplot           {args.plot}" if args.plot else ""))
    return summary


if __name__ == "__main__":
    main()
