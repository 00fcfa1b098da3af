"""PPO with rollouts in a TensorDict (TorchRL keys) and ``rt.GAE(gamma, lam)(rollout)``.

    python examples/ppo_tensordict.py                       # CartPole-v1, 200k steps
    python examples/ppo_tensordict.py --max-episode-steps 200 --truncation-as-death --plot td.png

The same agent as ``ppo_cleanrl.py``; what differs is how the rollout is stored and how
time limits reach the estimator.

Rollout layout (TorchRL's convention): a TensorDict with batch ``[num_envs, num_steps]``
(time the last batch dim) holding ``"observation"``, ``"action"``, ``"sample_log_prob"``,
``"state_value"`` and, under ``"next"``, ``"observation"``, ``"reward"``, ``"done"``,
``"terminated"``, ``"truncated"``, ``"state_value"``. ``rt.GAE(gamma, lam)(rollout)`` reads
those keys and writes ``"advantage"`` and ``"value_target"`` in place.

Time limits (the point of this example)
---------------------------------------
The vector env runs with Gymnasium's default ``autoreset_mode=NEXT_STEP``: the step that
ends an episode returns the *true* final observation (a natural ``("next", "observation")``),
and the env resets on the following call to ``step``, which ignores the action and returns
the reset observation with reward 0 and both flags False. So:

* ``("next", "state_value") = V(("next", "observation"))`` is the value of the true next
  state at every step, including time-limit steps: rltriton takes it as ``next_values``, a
  ``truncated`` step bootstraps from it and a ``terminated`` step ignores it; both cut the
  recursion. No ``infos["final_obs"]`` is needed.
* The step after a done is a *fake* transition (final obs -> reset obs, action ignored).
  It is kept in the rollout (so the TensorDict stays ``[N, T]`` for the scan) but marked
  ``"valid" = False`` and dropped before the PPO update: it never enters the policy loss,
  the value loss or the advantage statistics. It cannot leak into real steps either: the
  step before it is done, which cuts the GAE recursion there.

``--truncation-as-death`` writes ``("next", "terminated") = terminated | truncated``
(CleanRL's original behaviour) for comparison.
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
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
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
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="cpu", help="cpu or cuda (rltriton runs its Triton kernel on CUDA)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is fastest for these tiny nets)")
    p.add_argument("--csv", default=None, help="episode log (default runs/ppo_tensordict_<env>_s<seed>.csv)")
    p.add_argument("--plot", default=None, help="save a learning-curve PNG here (needs matplotlib)")
    p.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    return p.parse_args(argv)


def make_env(env_id: str, max_episode_steps: int | None):
    def thunk():
        env = gym.make(env_id, max_episode_steps=max_episode_steps)
        return gym.wrappers.RecordEpisodeStatistics(env)

    return thunk


def mlp(n_in: int, n_out: int, out_std: float) -> nn.Sequential:
    layers = [nn.Linear(n_in, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, n_out)]
    for layer in layers:
        if isinstance(layer, nn.Linear):
            nn.init.orthogonal_(layer.weight, out_std if layer is layers[-1] else np.sqrt(2))
            nn.init.zeros_(layer.bias)
    return nn.Sequential(*layers)


def finished_episodes(infos: dict) -> list[tuple[int, float, int]]:
    """(env, return, length) of the episodes that ended at this step, from RecordEpisodeStatistics.
    Under NEXT_STEP the info of the finishing step is at the top level of ``infos``."""
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

    # NEXT_STEP autoreset (Gymnasium's default, spelled out): see the docstring.
    thunks = [make_env(args.env_id, args.max_episode_steps) for _ in range(args.num_envs)]
    VecEnv = AsyncVectorEnv if args.async_envs else SyncVectorEnv
    envs = VecEnv(thunks, autoreset_mode=AutoresetMode.NEXT_STEP)
    assert isinstance(envs.single_action_space, gym.spaces.Discrete), "only discrete action spaces are supported"
    time_limit = envs.get_attr("spec")[0].max_episode_steps

    obs_dim = int(np.prod(envs.single_observation_space.shape))
    n_actions = int(envs.single_action_space.n)
    policy = TensorDictModule(mlp(obs_dim, n_actions, 0.01), ["observation"], ["logits"]).to(device)
    critic = TensorDictModule(mlp(obs_dim, 1, 1.0), ["observation"], ["state_value"]).to(device)
    params = list(policy.parameters()) + list(critic.parameters())
    optimizer = torch.optim.Adam(params, lr=args.learning_rate, eps=1e-5)
    gae = rt.GAE(args.gamma, args.gae_lambda)

    T, N = args.num_steps, args.num_envs
    num_updates = max(1, args.total_timesteps // (T * N))

    csv_path = Path(args.csv or f"runs/ppo_tensordict_{args.env_id}_s{args.seed}.csv")
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    csv_file = open(csv_path, "w", newline="")
    log = csv.writer(csv_file)
    log.writerow(["global_step", "env", "episode_return", "episode_length", "truncated"])
    episodes: list[tuple] = []

    def as_tensor(x, dtype=torch.float32):
        return torch.as_tensor(np.asarray(x), dtype=dtype, device=device)

    global_step, n_fake, start = 0, 0, time.time()
    obs = as_tensor(envs.reset(seed=args.seed)[0])
    autoreset = torch.zeros(N, dtype=torch.bool, device=device)  # this env's next step is the fake one
    bar = tqdm(range(1, num_updates + 1), desc=f"ppo-td {args.env_id}", unit="update", disable=args.no_progress)
    for update in bar:
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = (1.0 - (update - 1.0) / num_updates) * args.learning_rate

        keys = ("observation", "valid", "action", "sample_log_prob", "next_observation", "reward", "terminated",
                "truncated")
        buf: dict[str, list[torch.Tensor]] = {k: [] for k in keys}
        for _t in range(T):
            global_step += N
            with torch.no_grad():
                dist = Categorical(logits=policy.module(obs))  # the bare network: no TensorDict per step
                action = dist.sample()
            next_obs, reward, term, trunc, infos = envs.step(action.cpu().numpy())
            cut_by_limit = trunc & ~term  # a step both terminal and at the limit is terminal
            limit = cut_by_limit
            if args.truncation_as_death:
                term, limit = term | trunc, np.zeros_like(trunc)  # CleanRL: done = terminations | truncations
            term_t, trunc_t = as_tensor(term, torch.bool), as_tensor(limit, torch.bool)
            step = dict(observation=obs, valid=~autoreset, action=action, sample_log_prob=dist.log_prob(action),
                        next_observation=as_tensor(next_obs),  # NEXT_STEP: the true s_{t+1}, final obs included
                        reward=as_tensor(reward), terminated=term_t, truncated=trunc_t)
            for k in keys:
                buf[k].append(step[k])
            obs = step["next_observation"]
            n_fake += int(autoreset.sum())
            autoreset = term_t | trunc_t  # NEXT_STEP: these envs' next step is the fake reset transition

            for env_i, ep_ret, ep_len in finished_episodes(infos):
                row = (global_step, env_i, ep_ret, ep_len, int(cut_by_limit[env_i]))
                log.writerow(row)
                episodes.append(row)

        # The rollout as TorchRL lays it out: batch [N, T], time the last batch dim; rewards and
        # flags with a trailing singleton dim.
        b = {k: torch.stack(v, dim=1) for k, v in buf.items()}
        rollout = TensorDict({
            "observation": b["observation"], "action": b["action"], "sample_log_prob": b["sample_log_prob"],
            "valid": b["valid"],
            "next": {
                "observation": b["next_observation"],
                "reward": b["reward"].unsqueeze(-1),
                "done": (b["terminated"] | b["truncated"]).unsqueeze(-1),
                "terminated": b["terminated"].unsqueeze(-1),
                "truncated": b["truncated"].unsqueeze(-1),
            },
        }, batch_size=[N, T], device=device)
        with torch.no_grad():
            critic(rollout)                 # "state_value"          = V(s_t)
            critic(rollout["next"])         # ("next","state_value") = V(s_{t+1}), the true next state
            gae(rollout)                    # writes "advantage" and "value_target"

        # Drop the fake reset transitions of NEXT_STEP autoreset before the update.
        data = rollout.reshape(-1)
        data = data[data["valid"]]
        n = data.shape[0]
        mb_size = max(1, n // args.num_minibatches)
        clipfracs = []
        for _epoch in range(args.update_epochs):
            perm = torch.randperm(n, device=device)
            for lo in range(0, n - mb_size + 1, mb_size):
                mb = data[perm[lo:lo + mb_size]]
                dist = Categorical(logits=policy(mb.select("observation"))["logits"])
                logratio = dist.log_prob(mb["action"]) - mb["sample_log_prob"]
                ratio = logratio.exp()
                adv = mb["advantage"].squeeze(-1)
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                value = critic(mb.select("observation"))["state_value"]
                old_v, target = mb["state_value"], mb["value_target"]
                v_clipped = old_v + (value - old_v).clamp(-args.clip_coef, args.clip_coef)
                v_loss = 0.5 * torch.max((value - target) ** 2, (v_clipped - target) ** 2).mean()
                loss = pg_loss - args.ent_coef * dist.entropy().mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(params, args.max_grad_norm)
                optimizer.step()
                clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())

        csv_file.flush()
        recent = [r[2] for r in episodes[-20:]]
        bar.set_postfix(step=global_step, ret20=f"{np.mean(recent):.1f}" if recent else "-",
                        clip=f"{np.mean(clipfracs):.2f}", fake=n_fake)

    envs.close()
    csv_file.close()
    elapsed = time.time() - start
    if args.plot:
        mode = "truncation as death" if args.truncation_as_death else "bootstrap at time limits"
        save_plot(episodes, args.plot, f"PPO (TensorDict) {args.env_id} (time limit {time_limit}, {mode})")

    last20 = np.array([r[2] for r in episodes[-20:]]) if episodes else np.array([np.nan])
    summary = {
        "env": args.env_id, "steps": global_step, "seconds": elapsed, "episodes": len(episodes),
        "episodes_truncated": sum(r[4] for r in episodes), "fake_steps_dropped": n_fake,
        "last20_mean": float(last20.mean()),
        "mean_return": float(np.mean([r[2] for r in episodes])) if episodes else float("nan"),
    }
    limits = "treated as termination (CleanRL original)" if args.truncation_as_death else \
        "bootstrapped from (next, state_value)"
    print(f"\n== ppo_tensordict summary ==\n"
          f"env            {args.env_id}, time limit {time_limit}, {VecEnv.__name__} x{N}, NEXT_STEP autoreset\n"
          f"time limits    {limits}\n"
          f"steps          {global_step:,} in {elapsed:.1f} s ({global_step / elapsed:,.0f} steps/s), "
          f"{num_updates} updates;"
          f" {n_fake:,} fake reset steps dropped from the update\n"
          f"episodes       {len(episodes)} ({summary['episodes_truncated']} cut by the time limit)\n"
          f"return         last 20: {last20.mean():.1f} +- {last20.std():.1f}; "
          f"all episodes: {summary['mean_return']:.1f}\n"
          f"csv            {csv_path}" + (f"\nplot           {args.plot}" if args.plot else ""))
    return summary


if __name__ == "__main__":
    main()
