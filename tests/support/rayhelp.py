"""A local Ray of a test's own on this machine, and `pockettts serve --ray ADDRESS` as a
child process against it (tests/serve/test_ray_*.py)."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from pocketcli.serve.rayserve import PATIENT_SERVE
from tests.support.cli import SCRIPT
from tests.support.paths import ROOT
from tests.support.servehelp import wait_ready

START_SECONDS = 400.0  # replicas loading on a shared, loaded 2-core machine
# Ray Serve's autoscaling hears of ongoing requests every 10 s by default: every 0.5 s here,
# so a test's burst is seen in seconds (the cluster's processes read these at start).
FAST_METRICS = {
    "RAY_SERVE_HANDLE_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "0.5",
    "RAY_SERVE_REPLICA_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "0.5",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def local_cluster(cpus: int) -> Iterator[str]:
    """A local Ray of ``cpus`` CPUs (its workers import this checkout); yields its address,
    and stops it (only its own processes) at the end."""
    import ray

    extra = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    extra |= FAST_METRICS | PATIENT_SERVE  # the proxy's start timed out under busy loops
    extra.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    saved = {name: os.environ.get(name) for name in extra}
    os.environ.update(extra)
    try:
        context = ray.init(
            num_cpus=cpus,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            logging_level=logging.ERROR,
            log_to_driver=False,
        )
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    try:
        yield context.address_info["gcs_address"]
    finally:
        from ray import serve

        with suppress(Exception):  # also forgets this process's handle to the controller
            serve.shutdown()
        ray.shutdown()


class RayServer:
    """`pockettts serve --ray ADDRESS` as a child process, its stderr kept."""

    def __init__(
        self, address: str, *args: str, port: int | None = None, cwd: Path | None = None
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        argv = [SCRIPT, "serve", "--ray", address, "--port", str(self.port), *args]
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd
        )
        self.lines: list[str] = []
        self.listening = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace")
            self.lines.append(line)
            if '"event": "listening"' in line:
                self.listening.set()

    def wait(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while not self.listening.wait(1.0):
            assert self.proc.poll() is None, "".join(self.lines)[-3000:]
            assert time.monotonic() < deadline, "".join(self.lines)[-3000:]
        wait_ready(self.url)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait(30)

    def __enter__(self) -> RayServer:
        try:
            self.wait()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_exc) -> None:
        self.stop()


def running_replicas(app: str = "pockettts") -> int:
    """Replicas of the application Ray Serve reports as running."""
    from ray import serve

    status = serve.status().applications.get(app)
    if status is None:
        return 0
    return sum(
        count
        for deployment in status.deployments.values()
        for state, count in deployment.replica_states.items()
        if str(state).rpartition(".")[2] == "RUNNING"
    )
