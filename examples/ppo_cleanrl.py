"""CleanRL-style PPO on Gymnasium 1.x vector envs, with advantages from rltriton.

    python examples/ppo_cleanrl.py                          # CartPole-v1, 200k steps, 1-3 min on 2 CPU cores
    python examples/ppo_cleanrl.py --env-id Acrobot-v1 --async-envs --plot acrobot.png
    python examples/ppo_cleanrl.py --max-episode-steps 200 --truncation-as-death

This is CleanRL's ``ppo.py`` (discrete actions, time-major ``[num_steps, num_envs]`` buffers)
with its hand-written GAE loop replaced by one call::

    rt.gae(rewards, values, gamma=, lam=, terminated=, truncated=, bootstrap_values=, time_dim=0)

Time limits (the point of this example)
---------------------------------------
CleanRL sets ``next_done = terminations | truncations``: an episode cut by the time limit
is treated as if the pole had fallen, so the value target of the last step is ``r`` instead
of ``r + gamma * V(s_{t+1})``. That is wrong (the state after a time limit is not terminal)
and it is what ``--truncation-as-death`` reproduces.

By default this script does it right. The vector env runs with
``autoreset_mode=SAME_STEP``: when a sub-env finishes at step t, ``envs.step`` already
returns the *reset* observation of the next episode, and the true final observation
``s_{t+1}`` is in ``infos["final_obs"]``. So at step t we store

* ``terminated[t]`` -- s_{t+1} is terminal: no bootstrap, the GAE recursion is cut;
* ``truncated[t]`` -- the time limit cut the episode: the recursion is cut, but the step
  bootstraps from ``bootstrap_values[t] = V(infos["final_obs"])``;
* ``bootstrap_values[T-1] = V(next_obs)`` for envs still running at the window edge
  (CleanRL's ``next_value``).

rltriton reads ``values[t+1]`` as the next value everywhere else. Every stored transition is
real (SAME_STEP never produces the fake "terminal -> reset" step of Gymnasium's default
NEXT_STEP mode; ``ppo_tensordict.py`` shows the NEXT_STEP way, masking that step out).
"""

from __future__ import annotations

import argparse
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
    p.add_argument("--total-timesteps", type=int, default=200_000)
    p.add_argument("--max-episode-steps", type=int, default=None, help="override the env's time limit (e.g. 200)")
    p.add_argument("--truncation-as-death", action="store_true",
                   help="CleanRL's original behaviour: a time limit is treated as a termination (no bootstrap)")
    p.add_argument("--async-envs", action="store_true", help="AsyncVectorEnv (one process per env) instead of Sync")
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--num-steps", type=int, default=128, help="rollout length per env and update")
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--no-anneal-lr", dest="anneal_lr", action="store_false")
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=10)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.0)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--target-kl", type=float, default=None)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="cpu", help="cpu or cuda (rltriton runs its Triton kernel on CUDA)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is fastest for these tiny nets)")
    p.add_argument("--csv", default=None, help="episode log (default runs/ppo_cleanrl_<env>_s<seed>.csv)")
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

    def get_action_and_value(self, x: torch.Tensor, action: torch.Tensor | None = None):
        dist = Categorical(logits=self.actor(x))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.get_value(x)


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

    # SAME_STEP autoreset: the step that ends an episode returns the next episode's first
    # observation, and the true final observation in infos["final_obs"] (see the docstring).
    thunks = [make_env(args.env_id, args.max_episode_steps) for _ in range(args.num_envs)]
    VecEnv = AsyncVectorEnv if args.async_envs else SyncVectorEnv
    envs = VecEnv(thunks, autoreset_mode=AutoresetMode.SAME_STEP)
    assert isinstance(envs.single_action_space, gym.spaces.Discrete), "only discrete action spaces are supported"
    time_limit = envs.get_attr("spec")[0].max_episode_steps

    obs_dim = int(np.prod(envs.single_observation_space.shape))
    agent = Agent(obs_dim, int(envs.single_action_space.n)).to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    T, N = args.num_steps, args.num_envs
    batch_size = T * N
    minibatch_size = batch_size // args.num_minibatches
    num_updates = max(1, args.total_timesteps // batch_size)

    # Time-major rollout buffers, as in CleanRL. Step t is the transition (s_t, a_t, r_t, s_{t+1}).
    obs = torch.zeros((T, N, obs_dim), device=device)
    actions = torch.zeros((T, N), dtype=torch.long, device=device)
    logprobs = torch.zeros((T, N), device=device)
    rewards = torch.zeros((T, N), device=device)
    values = torch.zeros((T, N), device=device)
    terminated = torch.zeros((T, N), dtype=torch.bool, device=device)
    truncated = torch.zeros((T, N), dtype=torch.bool, device=device)
    # V(s_{t+1}) where values[t+1] is not it: time-limit steps and the window edge t = T-1.
    bootstrap = torch.zeros((T, N), device=device)

    csv_path = Path(args.csv or f"runs/ppo_cleanrl_{args.env_id}_s{args.seed}.csv")
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    csv_file = open(csv_path, "w", newline="")
    log = csv.writer(csv_file)
    log.writerow(["global_step", "env", "episode_return", "episode_length", "truncated"])
    episodes: list[tuple] = []

    global_step, start = 0, time.time()
    next_obs = torch.as_tensor(envs.reset(seed=args.seed)[0], dtype=torch.float32, device=device)
    bar = tqdm(range(1, num_updates + 1), desc=f"ppo {args.env_id}", unit="update", disable=args.no_progress)
    for update in bar:
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = (1.0 - (update - 1.0) / num_updates) * args.learning_rate

        for t in range(T):
            global_step += N
            obs[t] = next_obs
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
            actions[t], logprobs[t], values[t] = action, logprob, value

            next_obs_np, reward, term, trunc, infos = envs.step(action.cpu().numpy())
            rewards[t] = torch.as_tensor(reward, dtype=torch.float32, device=device)
            cut_by_limit = trunc & ~term  # a step both terminal and at the limit is terminal
            limit = cut_by_limit
            if args.truncation_as_death:
                term, limit = term | trunc, np.zeros_like(trunc)  # CleanRL: next_done = terminations | truncations
            terminated[t] = torch.as_tensor(term, device=device)
            truncated[t] = torch.as_tensor(limit, device=device)
            if limit.any():
                # The env was reset in this same step: next_obs_np holds the new episode's first
                # observation, the state the time limit cut off is infos["final_obs"].
                idx = np.nonzero(limit)[0]
                final_obs = torch.as_tensor(np.stack(infos["final_obs"][idx]), dtype=torch.float32, device=device)
                with torch.no_grad():
                    bootstrap[t, torch.as_tensor(idx, device=device)] = agent.get_value(final_obs)
            next_obs = torch.as_tensor(next_obs_np, dtype=torch.float32, device=device)

            for env_i, ep_ret, ep_len in finished_episodes(infos):
                row = (global_step, env_i, ep_ret, ep_len, int(cut_by_limit[env_i]))
                log.writerow(row)
                episodes.append(row)

        # Window edge: envs still running continue from next_obs (CleanRL's next_value). A
        # step truncated at T-1 keeps V(final_obs); a terminated one ignores the value.
        with torch.no_grad():
            bootstrap[T - 1] = torch.where(truncated[T - 1], bootstrap[T - 1], agent.get_value(next_obs))
        advantages, returns = rt.gae(
            rewards, values, gamma=args.gamma, lam=args.gae_lambda,
            terminated=terminated, truncated=truncated, bootstrap_values=bootstrap,
            time_dim=0,  # CleanRL's time-major [T, N] buffers, read in place
        )

        # PPO update, exactly as CleanRL.
        b_obs, b_actions, b_logprobs = obs.reshape(-1, obs_dim), actions.reshape(-1), logprobs.reshape(-1)
        b_advantages, b_returns, b_values = advantages.reshape(-1), returns.reshape(-1), values.reshape(-1)
        b_inds = np.arange(batch_size)
        clipfracs, approx_kl = [], torch.zeros(())
        for _epoch in range(args.update_epochs):
            np.random.shuffle(b_inds)
            for lo in range(0, batch_size, minibatch_size):
                mb = b_inds[lo:lo + minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_actions[mb])
                logratio = newlogprob - b_logprobs[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())
                mb_adv = b_advantages[mb]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                clipped_ratio = ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)
                pg_loss = torch.max(-mb_adv * ratio, -mb_adv * clipped_ratio).mean()
                v_unclipped = (newvalue - b_returns[mb]) ** 2
                v_clipped = b_values[mb] + (newvalue - b_values[mb]).clamp(-args.clip_coef, args.clip_coef)
                v_loss = 0.5 * torch.max(v_unclipped, (v_clipped - b_returns[mb]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
            if args.target_kl is not None and approx_kl > args.target_kl:
                break

        csv_file.flush()
        recent = [r[2] for r in episodes[-20:]]
        bar.set_postfix(step=global_step, ret20=f"{np.mean(recent):.1f}" if recent else "-",
                        kl=f"{approx_kl.item():.4f}", clip=f"{np.mean(clipfracs):.2f}")

    envs.close()
    csv_file.close()
    elapsed = time.time() - start
    if args.plot:
        mode = "truncation as death" if args.truncation_as_death else "bootstrap at time limits"
        save_plot(episodes, args.plot, f"PPO {args.env_id} (time limit {time_limit}, {mode})")

    last20 = np.array([r[2] for r in episodes[-20:]]) if episodes else np.array([np.nan])
    summary = {
        "env": args.env_id, "steps": global_step, "seconds": elapsed, "episodes": len(episodes),
        "episodes_truncated": sum(r[4] for r in episodes), "last20_mean": float(last20.mean()),
        "mean_return": float(np.mean([r[2] for r in episodes])) if episodes else float("nan"),
    }
    limits = "treated as termination (CleanRL original)" if args.truncation_as_death else \
        "bootstrapped from V(final obs)"
    print(f"\n== ppo_cleanrl summary ==\n"
          f"env            {args.env_id}, time limit {time_limit}, {VecEnv.__name__} x{N}, SAME_STEP autoreset\n"
          f"time limits    {limits}\n"
          f"steps          {global_step:,} in {elapsed:.1f} s ({global_step / elapsed:,.0f} steps/s), "
          f"{num_updates} updates\n"
          f"episodes       {len(episodes)} ({summary['episodes_truncated']} cut by the time limit)\n"
          f"return         last 20: {last20.mean():.1f} +- {last20.std():.1f}; "
          f"all episodes: {summary['mean_return']:.1f}\n"
          f"csv            {csv_path}" + (f"\nplot           {args.plot}" if args.plot else ""))
    return summary


if __name__ == "__main__":
    main()
