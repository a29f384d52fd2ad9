"""Data-parallel training of a small regression model with JAX, resumable from a checkpoint.

Each process is one JobSet pod. The JobSet's jax preset gives it `JAX_COORDINATOR_ADDRESS`
(rank 0's stable DNS name and port), `JAX_NUM_PROCESSES` and `JAX_PROCESS_ID`; the processes
form one JAX cluster with CPU collectives over gloo, so each step's gradient is averaged over
every process's shard of the global batch.

The checkpoint directory (`CHECKPOINT_DIR`, a volume every pod mounts) holds:
- `checkpoint.npz`: the parameters and the step after which they were taken, written by
  rank 0 every `CHECKPOINT_EVERY` steps (to a temporary file, then renamed, so a crash never
  leaves half a checkpoint);
- `progress.jsonl`: one line per step from rank 0 (`step`, `loss`, wall `time`, `attempt`),
  and a `start` line per attempt (`launched`: when the process started, before importing
  jax), which is how a restart's lost time is measured from outside.

On start, rank 0 reads the checkpoint (if any) and broadcasts it, so every rank resumes from
the same step. `FAIL_ONCE_AT_STEP`/`FAIL_RANK` make one rank exit with an error at that step,
once: the marker file `failed-once-<rank>` in the checkpoint directory (the step and time of
the failure) remembers it across restarts of any kind (recreated pods, or containers
restarted in place).

Only numpy and jax are needed; the data is synthetic and generated from the step and rank, so
nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

LAUNCHED = time.time()  # before jax is imported: the start event says how long that took

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

FEATURES = 64
HIDDEN = 128
SEED = 7


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value else default


def init_params() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    return {
        "w1": rng.normal(0, FEATURES**-0.5, (FEATURES, HIDDEN)).astype(np.float32),
        "b1": np.zeros(HIDDEN, np.float32),
        "w2": rng.normal(0, HIDDEN**-0.5, (HIDDEN, 1)).astype(np.float32),
        "b2": np.zeros(1, np.float32),
    }


def local_batch(step: int, rank: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """This rank's shard of the global batch of `step`: the same on every attempt."""
    rng = np.random.default_rng([SEED, step, rank])
    x = rng.normal(size=(size, FEATURES)).astype(np.float32)
    teacher = np.random.default_rng(SEED + 1).normal(0, FEATURES**-0.5, (FEATURES, 1))
    teacher = teacher.astype(np.float32)
    y = np.tanh(x @ teacher) + 0.01 * rng.normal(size=(size, 1)).astype(np.float32)
    return x, y


def loss_fn(params: dict[str, Any], x: jax.Array, y: jax.Array) -> jax.Array:
    hidden = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean((hidden @ params["w2"] + params["b2"] - y) ** 2)


def make_step(learning_rate: float) -> Any:
    @jax.jit
    def step(params: dict[str, Any], x: jax.Array, y: jax.Array) -> tuple[Any, jax.Array]:
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        params = jax.tree_util.tree_map(lambda p, g: p - learning_rate * g, params, grads)
        return params, loss

    return step


def load_checkpoint(path: Path) -> tuple[int, dict[str, np.ndarray]]:
    if not path.exists():
        return 0, init_params()
    with np.load(path) as data:
        return int(data["step"]), {k: data[k] for k in ("w1", "b1", "w2", "b2")}


def save_checkpoint(path: Path, step: int, params: dict[str, np.ndarray]) -> None:
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, step=np.int64(step), **params)
    os.replace(tmp, path)


def record(progress: Path, line: dict[str, Any], show: bool = True) -> None:
    if show:
        print(json.dumps(line), flush=True)
    with progress.open("a") as f:
        f.write(json.dumps(line) + "\n")


def fail_once(directory: Path, rank: int, step: int) -> None:
    if step != env_int("FAIL_ONCE_AT_STEP", -1) or rank != env_int("FAIL_RANK", -1):
        return
    marker = directory / f"failed-once-{rank}"
    if marker.exists():
        return
    marker.write_text(json.dumps({"step": step, "time": time.time()}) + "\n")
    print(f"rank {rank}: injected failure at step {step}", file=sys.stderr, flush=True)
    os._exit(1)


def initialize() -> int:
    """Join the JAX cluster of `JAX_NUM_PROCESSES` processes; return this one's rank."""
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    processes = env_int("JAX_NUM_PROCESSES", 1)
    rank = env_int("JAX_PROCESS_ID", 0)
    if processes > 1:
        jax.distributed.initialize(
            coordinator_address=os.environ["JAX_COORDINATOR_ADDRESS"],
            num_processes=processes,
            process_id=rank,
            initialization_timeout=env_int("JAX_INIT_TIMEOUT", 300),
            heartbeat_timeout_seconds=env_int("JAX_HEARTBEAT_TIMEOUT", 10),
        )
    return rank


def train() -> None:
    rank = initialize()
    directory = Path(os.environ.get("CHECKPOINT_DIR", "/checkpoints"))
    directory.mkdir(parents=True, exist_ok=True)
    ckpt, progress = directory / "checkpoint.npz", directory / "progress.jsonl"
    steps, every = env_int("STEPS", 300), env_int("CHECKPOINT_EVERY", 25)
    per_process = env_int("BATCH_PER_PROCESS", 256)
    attempt = os.environ.get("RESTART_ATTEMPT", "")

    mesh = Mesh(np.array(jax.devices()), ("data",))
    replicated, sharded = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    start, host_params = load_checkpoint(ckpt) if rank == 0 else (0, init_params())
    start = int(multihost_utils.broadcast_one_to_all(np.int64(start)))
    host_params = multihost_utils.broadcast_one_to_all(host_params)
    params = jax.device_put(host_params, replicated)
    if rank == 0:
        now = time.time()
        line = {"event": "start", "step": start, "time": now, "attempt": attempt}
        record(progress, {**line, "launched": LAUNCHED})
        if start:
            print(f"resumed-from-step={start}", flush=True)
    step_fn = make_step(env_int("LEARNING_RATE_MILLI", 50) / 1000)

    for step in range(start, steps):
        fail_once(directory, rank, step)
        x, y = local_batch(step, rank, per_process)
        gx = jax.make_array_from_process_local_data(sharded, x)
        gy = jax.make_array_from_process_local_data(sharded, y)
        params, loss = step_fn(params, gx, gy)
        loss.block_until_ready()  # every rank keeps in step: a failure stops the step it is at
        done = step + 1
        if rank == 0:
            checkpoint = done % every == 0 or done == steps
            line = {"step": done, "loss": float(loss), "time": time.time(), "attempt": attempt}
            record(progress, line, show=checkpoint)
            if checkpoint:
                local = {k: np.asarray(v.addressable_data(0)) for k, v in params.items()}
                save_checkpoint(ckpt, done, local)
    if rank == 0:
        record(progress, {"event": "done", "step": steps, "time": time.time(), "attempt": attempt})
    multihost_utils.sync_global_devices("done")


if __name__ == "__main__":
    train()
