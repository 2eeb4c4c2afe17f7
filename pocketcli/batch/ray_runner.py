"""``--ray [ADDRESS]``: the same batch on Ray actors, on one machine or a cluster.

- ``--ray`` alone (``local``) starts a local Ray instance limited to this
  machine's cores; ``--ray auto`` or ``--ray HOST:PORT`` / ``ray://...`` joins
  an existing cluster.
- Each actor loads the model once (the pack the driver resolved, by path; on a
  node without that path, from the store for the same language or config: a
  download per node unless the pack is on a shared path or pre-fetched with
  ``pockettts download``). pockettts must be installed on every node.
- Lines go to actors in groups of ``GROUP``; ``DEPTH`` groups are queued per
  actor. Each line is streamed into a file on the actor's node and its WAV
  bytes come back to the driver, which alone writes files and
  the manifest: nodes need no shared file system.
- An actor whose process dies is restarted by Ray (``max_restarts``); only the
  groups it held are made again, and the driver writes each line once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator

from pocketcli.batch.cluster import check_reachable
from pocketcli.batch.plan import Job
from pocketcli.batch.queue import JobQueue
from pocketcli.batch.worker import LineResult, LineWorker, ModelSpec, describe_error
from pocketcli.errors import FieldHint, UserError
from pocketcli.options import SpeakOptions

GROUP = 4  # lines per actor call: small, so a lost actor costs little and the tail balances
DEPTH = 2  # calls queued per actor
MAX_RESTARTS = 3  # per actor
MAX_ATTEMPTS = 3  # lost groups a line may be in before it is reported as failed
PROBE_EVERY = 0.5  # seconds between checks whether a restarting actor is back
INSTALL_HINT = "{ray} needs Ray: pip install 'pockettts[ray]' (or: pip install ray)"


def import_ray():
    try:
        import ray
    except ImportError:
        raise FieldHint(INSTALL_HINT, "ray") from None
    return ray


class _Actor:
    """The body of a Ray actor: a LineWorker, or why the model could not be loaded.

    The voice comes with each call as a boxed ObjectRef and is fetched once per
    actor life: constructor arguments held in the object store would make Ray
    warn that a restart could fail.
    """

    def __init__(self, spec: ModelSpec, options: SpeakOptions) -> None:
        self.error: str | None = None
        self.voice_ref: str | None = None
        try:
            self.worker: LineWorker | None = LineWorker.load(spec, None, options)
        except Exception as exc:
            self.worker, self.error = None, describe_error(exc)

    def ready(self) -> tuple[str | None, str]:
        return self.error, self.worker.name if self.worker else ""

    def make(self, voice_box: list, jobs: list[Job]) -> list[LineResult]:
        import ray

        assert self.worker is not None
        (ref,) = voice_box
        if self.voice_ref != ref.hex():
            self.worker.voice, self.voice_ref = ray.get(ref), ref.hex()
        return [self.worker.make_bytes(job) for job in jobs]


class RayExecutor:
    def __init__(
        self,
        address: str,
        spec: ModelSpec,
        voice,
        options: SpeakOptions,
        workers: int | None,
        cpus_per_worker: int,
        note: Callable[[str], None],
        local_cpus: int,
    ) -> None:
        ray = import_ray()
        self.ray = ray
        self.note = note
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        init = {"include_dashboard": False, "logging_level": logging.ERROR, "log_to_driver": False}
        self._started_here = address == "local"
        if not self._started_here:
            check_reachable(address)  # one line at once, where Ray retries for minutes
        try:
            if self._started_here:
                # room for every worker asked for, even past this machine's cores
                wanted = (workers or 1) * cpus_per_worker
                ray.init(num_cpus=max(local_cpus, wanted), **init)
            else:
                ray.init(address=address, **init)
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError...
            where = "start a local Ray instance" if self._started_here else f"join {address}"
            raise UserError(f"cannot {where}: {describe_error(exc)}") from None
        cpus = int(ray.cluster_resources().get("CPU", 0))
        if workers is None:
            workers = max(1, cpus // cpus_per_worker)
        if workers * cpus_per_worker > cpus:  # the actors would wait for room forever
            self.close()
            room = max(1, cpus // cpus_per_worker)
            raise FieldHint(
                f"the Ray cluster has {cpus} CPU(s): no room for {workers} worker(s) of "
                f"{cpus_per_worker} CPU(s); give {{jobs}} {room} or less",
                "jobs",
            )
        self.workers = workers
        remote = ray.remote(
            num_cpus=cpus_per_worker, max_restarts=MAX_RESTARTS, max_task_retries=0
        )(_Actor)
        self._voice_box = [ray.put(voice)]
        self._actors = [remote.remote(spec, options) for _ in range(workers)]
        self.names: dict[int, str] = {}
        for index, (error, name) in enumerate(ray.get([a.ready.remote() for a in self._actors])):
            if error is not None:
                self.close()
                raise UserError(f"a Ray worker cannot load the model: {error}")
            self.names[index] = name

    def run(self, jobs: Iterator[Job]) -> Iterator[LineResult]:
        ray = self.ray
        lost_errors = (ray.exceptions.RayActorError,)  # ActorDiedError, ActorUnavailableError
        queue = JobQueue(jobs, MAX_ATTEMPTS)
        held: dict = {}  # ObjectRef -> (actor index, its jobs; None for a probe)
        # per actor: "up", "down" (restarting: probed until it answers) or "dead" (for good)
        state = ["up"] * len(self._actors)
        probe_at = [0.0] * len(self._actors)

        def calls(index: int) -> int:
            return sum(1 for a, _ in held.values() if a == index)

        while True:
            now = time.monotonic()
            for index, actor in enumerate(self._actors):
                if state[index] == "down" and not calls(index) and now >= probe_at[index]:
                    held[actor.ready.remote()] = (index, None)
                while state[index] == "up" and calls(index) < DEPTH:
                    group = queue.take(GROUP)
                    if not group:
                        break
                    held[actor.make.remote(self._voice_box, group)] = (index, group)
            if not any(group for _, group in held.values()) and queue.empty:
                return
            if all(s == "dead" for s in state):
                raise UserError("every Ray worker died; stopping")
            if not held:  # every live actor is restarting: wait for the next probe
                time.sleep(PROBE_EVERY)
                continue
            done, _ = ray.wait(list(held), num_returns=1, timeout=PROBE_EVERY)
            for ref in done:
                index, group = held.pop(ref)
                try:
                    results = ray.get(ref)
                except lost_errors as exc:
                    if isinstance(exc, ray.exceptions.ActorUnavailableError):
                        state[index] = "down"
                    else:
                        state[index] = "dead" if group is None else "down"
                    probe_at[index] = time.monotonic() + PROBE_EVERY
                    if group is not None:
                        yield from self._lost(index, group, exc, queue)
                    continue
                if group is None:  # restarted: up again once its model is loaded
                    error, name = results
                    state[index] = "dead" if error else "up"
                    self.names[index] = name or self.names.get(index, "")
                else:
                    yield from results

    def _lost(self, index: int, group: list[Job], exc, queue: JobQueue):
        failed, again = queue.give_back(group, type(exc).__name__)
        yield from failed
        self.note(
            f"pockettts: Ray worker {self.names.get(index, index)} died "
            f"({type(exc).__name__}); {again} line(s) it held will be made again"
        )

    def close(self) -> None:
        ray = self.ray
        for actor in getattr(self, "_actors", []):
            with contextlib.suppress(Exception):  # already gone
                ray.kill(actor, no_restart=True)
        self._actors = []
        if ray.is_initialized():
            ray.shutdown()
