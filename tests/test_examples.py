"""The training scripts in examples/: a CPU smoke test (CI) and learning tests (``-m slow``).

Smoke: every script runs a handful of updates with tiny flags, in subprocesses started
together (the imports dominate, so they overlap), and writes its CSV, its PNG and its summary.
Short time limits (``--max-episode-steps``) make the time-limit paths run: the bootstrap from
``infos["final_obs"]`` (SAME_STEP) and the masked fake reset step (NEXT_STEP).

Learning (``python -m pytest -m slow tests/test_examples.py``, minutes on 2 cores):
CartPole reaches a mean return >= 450 over the last 20 episodes within 200k steps; with a
200-step time limit, bootstrapping at the limit learns at least as well as CleanRL's
"truncation is death"; and with a lagging actor V-trace learns where the uncorrected policy
gradient does worse. Results and commands are recorded in examples/README.md.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("gymnasium", minversion="1.0")
pytest.importorskip("tqdm")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SCRIPTS = ["ppo_cleanrl.py", "ppo_tensordict.py", "ppo_continuous.py", "impala_vtrace.py"]


def has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.pop("TRITON_INTERPRET", None)  # the examples run the default backends (torch on CPU)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), e.get("PYTHONPATH", "")])
    e["OMP_NUM_THREADS"] = "1"
    return e


def start(script: str, *flags: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(EXAMPLES / script), *flags], cwd=ROOT, env=env(),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def finish(proc: subprocess.Popen, timeout: float) -> str:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"{proc.args} ran past {timeout} s:\n{out[-3000:]}")
    assert proc.returncode == 0, f"{proc.args} exited {proc.returncode}:\n{out[-3000:]}"
    return out


def episodes(path: Path) -> list[dict[str, float]]:
    with open(path) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


# --- smoke (CI) ----------------------------------------------------------------------------

TINY = ["--num-envs", "2", "--num-steps", "32", "--no-progress"]
PPO_TINY = [*TINY, "--total-timesteps", "192", "--update-epochs", "2", "--num-minibatches", "2"]


PLOTS = {"cleanrl": "cleanrl.png", "tensordict": "td.png", "continuous_pendulum": "pendulum.png",
         "impala": "impala.png"}


def smoke_runs(tmp: Path) -> dict[str, list[str]]:
    runs = {
        # 3 updates; a 15-step limit makes truncations (and their bootstrap) happen
        "cleanrl": ["ppo_cleanrl.py", *PPO_TINY, "--max-episode-steps", "15", "--plot", str(tmp / "cleanrl.png")],
        "cleanrl_async_death": ["ppo_cleanrl.py", *PPO_TINY, "--max-episode-steps", "15", "--async-envs",
                                "--truncation-as-death"],
        "tensordict": ["ppo_tensordict.py", *PPO_TINY, "--max-episode-steps", "15", "--plot", str(tmp / "td.png")],
        "continuous_pendulum": ["ppo_continuous.py", *PPO_TINY, "--env-id", "Pendulum-v1", "--max-episode-steps", "15",
                                "--plot", str(tmp / "pendulum.png")],
        "impala": ["impala_vtrace.py", *TINY, "--total-timesteps", "320", "--lag", "2", "--max-episode-steps", "15",
                   "--plot", str(tmp / "impala.png")],
    }
    if has("Box2D") and has("pygame"):  # the default env of ppo_continuous.py
        runs["continuous_lander"] = ["ppo_continuous.py", *PPO_TINY, "--max-episode-steps", "40"]
    for name, cmd in runs.items():
        cmd += ["--csv", str(tmp / f"{name}.csv")]
    return runs


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """Start every smoke run (and ``--help`` of every script) at once; tests collect them."""
    tmp = tmp_path_factory.mktemp("examples")
    runs = smoke_runs(tmp)
    procs = {name: start(cmd[0], *cmd[1:]) for name, cmd in runs.items()}
    # every script's --help in one interpreter (the imports are the cost)
    show_help = ("import runpy, sys\n"
                 f"for s in {[str(EXAMPLES / s) for s in SCRIPTS]!r}:\n"
                 "    sys.argv = [s, '--help']; print('=== ' + s)\n"
                 "    try: runpy.run_path(s, run_name='__main__')\n"
                 "    except SystemExit: pass\n")
    procs["help"] = subprocess.Popen([sys.executable, "-c", show_help], cwd=ROOT, env=env(),
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    yield tmp, procs
    for p in procs.values():
        if p.poll() is None:
            p.kill()
            p.communicate()


def test_help(smoke):
    _, procs = smoke
    out = finish(procs["help"], 120)
    for script, text in zip(SCRIPTS, out.split("=== ")[1:]):
        assert text.startswith(str(EXAMPLES / script)) and f"usage: {script}" in text, text
        for flag in ("--env-id", "--total-timesteps", "--truncation-as-death", "--async-envs", "--csv", "--plot"):
            assert flag in text, (script, flag)


@pytest.mark.parametrize("name", ["cleanrl", "cleanrl_async_death", "tensordict", "continuous_pendulum", "impala",
                                  "continuous_lander"])
def test_smoke(smoke, name):
    tmp, procs = smoke
    if name not in procs:
        pytest.skip("Box2D/pygame not installed (pip install -e '.[examples]')")
    out = finish(procs[name], 240)
    assert "summary ==" in out and "steps/s" in out
    rows = episodes(tmp / f"{name}.csv")
    assert rows, f"no episode logged:\n{out[-2000:]}"
    assert all(r["episode_length"] >= 1 for r in rows)
    if name != "continuous_lander":
        # a 15-step limit: every episode ends by then, and the cut ones are logged as truncated
        assert all(r["episode_length"] <= 15 for r in rows)
        assert any(r["truncated"] == 1 for r in rows), "expected time-limit truncations with a 15-step limit"
    if name == "cleanrl_async_death":
        assert "treated as termination" in out and "AsyncVectorEnv" in out
    if name == "tensordict":
        assert "fake reset steps dropped" in out
    png = PLOTS.get(name)
    if png:
        assert (tmp / png).stat().st_size > 1000


# --- learning (slow, not in CI) -----------------------------------------------------------


def run_parallel(cmds: list[list[str]], timeout: float) -> list[str]:
    """Run scripts two at a time (one per core) and return their outputs."""
    outs = []
    for i in range(0, len(cmds), 2):
        procs = [start(c[0], *c[1:]) for c in cmds[i:i + 2]]
        outs += [finish(p, timeout) for p in procs]
    return outs


def mean(xs):
    return sum(xs) / len(xs)


@pytest.mark.slow
def test_cartpole_learns_within_200k_steps(tmp_path):
    log = tmp_path / "cartpole.csv"
    out = finish(start("ppo_cleanrl.py", "--total-timesteps", "200000", "--csv", str(log), "--no-progress"), 1500)
    rows = episodes(log)
    assert max(r["global_step"] for r in rows) <= 200_000
    last20 = mean([r["episode_return"] for r in rows[-20:]])
    print(out[out.index("== ppo_cleanrl summary"):])
    assert last20 >= 450, f"mean return of the last 20 episodes {last20:.1f} < 450"


@pytest.mark.slow
@pytest.mark.parametrize("script", ["ppo_cleanrl.py", "ppo_tensordict.py"])
def test_time_limit_bootstrap_learns_at_least_as_well_as_truncation_as_death(tmp_path, script):
    """CartPole cut at 200 steps, 2 seeds per mode. Both modes reach the limit on CartPole (a
    time-limit "death" there shifts every action's advantage alike), so "at least as well" is
    checked as: every bootstrap run ends at the limit, and its mean return over the whole run
    (learning speed) is not below the truncation-as-death runs' by more than 3% of the limit."""
    seeds = ["1", "2"]
    base = ["--total-timesteps", "200000", "--max-episode-steps", "200", "--no-progress"]
    cmds = [[script, *base, "--seed", s, "--csv", str(tmp_path / f"{mode}_{s}.csv"),
             *(["--truncation-as-death"] if mode == "death" else [])]
            for s in seeds for mode in ("bootstrap", "death")]
    run_parallel(cmds, 1500)
    result = {}
    for mode in ("bootstrap", "death"):
        runs = [episodes(tmp_path / f"{mode}_{s}.csv") for s in seeds]
        result[mode] = {
            "all_episodes": mean([mean([r["episode_return"] for r in rows]) for rows in runs]),
            "last20": [mean([r["episode_return"] for r in rows[-20:]]) for rows in runs],
        }
    print(script, result)
    assert all(x >= 195 for x in result["bootstrap"]["last20"]), result
    assert result["bootstrap"]["all_episodes"] >= result["death"]["all_episodes"] - 6.0, result


@pytest.mark.slow
def test_vtrace_corrects_a_lagging_actor(tmp_path):
    """Actor 16 updates behind the learner: V-trace learns, the uncorrected policy gradient on
    the same stale data does worse (mean return over the run, 2 seeds)."""
    seeds = ["1", "2"]
    cmds = [["impala_vtrace.py", "--lag", "16", "--seed", s, "--no-progress", "--csv", str(tmp_path / f"{m}_{s}.csv"),
             *(["--no-correction"] if m == "plain" else [])]
            for s in seeds for m in ("vtrace", "plain")]
    run_parallel(cmds, 1500)
    res = {m: [mean([r["episode_return"] for r in episodes(tmp_path / f"{m}_{s}.csv")]) for s in seeds]
           for m in ("vtrace", "plain")}
    last = {m: [mean([r["episode_return"] for r in episodes(tmp_path / f"{m}_{s}.csv")[-100:]]) for s in seeds]
            for m in ("vtrace", "plain")}
    print({"mean over run": res, "last 100": last})
    assert mean(last["vtrace"]) >= 300, last
    assert mean(res["vtrace"]) > mean(res["plain"]), res
