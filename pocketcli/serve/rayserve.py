"""``pockettts serve --ray [ADDRESS]``: the same server as a Ray Serve application.

- Each replica (a Ray actor) loads the model once and runs the very app of
  ``pockettts serve`` (``create_app``: routes, admission, the many-streams
  engine with its own ``--max-streams``, metrics, the websocket) behind Ray
  Serve's HTTP proxy, which streams each response as the replica makes it.
- Ray Serve's autoscaling adds and removes replicas on ongoing requests: the
  target is a replica's streams, ``max_ongoing_requests`` its streams plus its
  queue, so a full replica is given nothing more and the proxy queues (then
  answers 503 past ``max_queued_requests``): the back-pressure is Ray's.
- Cloned voices live in one actor (``VoiceShelf``) that the driver (this
  command) owns: every replica stores and finds them there, so a voice cloned
  through one replica is spoken by all, and outlives a replica; it goes when
  the command stops.
- Without ADDRESS a local Ray is started for the purpose (and stopped after);
  with it, the command joins that cluster (``auto``, ``HOST:PORT``, ``ray://``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pocketcli import defaults
from pocketcli.batch.argv import RAY_LOCAL
from pocketcli.batch.cluster import check_reachable
from pocketcli.errors import FieldHint, UserError
from pocketcli.frontends.voices import ClonedVoice
from pocketcli.serve.settings import ServeSettings

if TYPE_CHECKING:
    from pocketcli.options import ModelRequest

APP_NAME = "pockettts"
NAMESPACE = "pockettts"
REPLICA_HEADER = b"x-pockettts-replica"  # which replica answered (ids as Ray names them)
SHELF_SECONDS = 30.0  # a call to the shelf of cloned voices
STOP_SLACK_SECONDS = 10.0  # past the drain, for Ray to remove the application


@dataclass(frozen=True)
class Scaling:
    """How many replicas, and when Ray Serve adds or removes one."""

    min_replicas: int = defaults.RAY_MIN_REPLICAS
    max_replicas: int = defaults.RAY_MIN_REPLICAS
    cpus_per_replica: float = 1.0
    upscale_delay_s: float = defaults.RAY_UPSCALE_DELAY_S
    downscale_delay_s: float = defaults.RAY_DOWNSCALE_DELAY_S

    def deployment_options(self, settings: ServeSettings) -> dict[str, Any]:
        limits = settings.limits
        options: dict[str, Any] = {
            "name": "PocketTTS",
            "max_ongoing_requests": limits.max_streams + limits.max_queue,
            "max_queued_requests": max(limits.max_queue, 1),
            "ray_actor_options": {"num_cpus": self.cpus_per_replica},
            # A replica Ray stops (scaling down, or the application deleted) is sent no more
            # requests and is given until every stream it has ends: none outlives
            # --request-timeout, then --shutdown-timeout for the engine to close. The command
            # itself waits only --shutdown-timeout for that (``run``).
            "graceful_shutdown_timeout_s": limits.request_seconds + settings.shutdown_seconds,
            "graceful_shutdown_wait_loop_s": 0.5,
            "health_check_period_s": 2.0,
            "health_check_timeout_s": 30.0,
        }
        if self.min_replicas == self.max_replicas:
            options["num_replicas"] = self.min_replicas
        else:
            options["autoscaling_config"] = {
                "min_replicas": self.min_replicas,
                "initial_replicas": self.min_replicas,
                "max_replicas": self.max_replicas,
                "target_ongoing_requests": limits.max_streams,
                "upscale_delay_s": self.upscale_delay_s,
                "downscale_delay_s": self.downscale_delay_s,
            }
        return options


@dataclass(frozen=True)
class ReplicaSpec:
    """What a replica needs to load the model and build the app (sent by Ray)."""

    request: ModelRequest
    voice: str | None
    voice_file: Path | None
    settings: ServeSettings
    shelf: Any  # the VoiceShelf actor's handle
    log_level: str = "info"


class VoiceShelf:
    """The body of the actor the command owns: it keeps cloned voices for every replica (LRU
    by id), and why a replica could not load the model (Ray itself only says that the
    deployment failed)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.voices: OrderedDict[str, ClonedVoice] = OrderedDict()
        self.load_failures: list[str] = []

    def load_failed(self, why: str) -> None:
        if len(self.load_failures) < 8:  # Ray retries a replica a few times: the first tell
            self.load_failures.append(why)

    def first_load_failure(self) -> str | None:
        return self.load_failures[0] if self.load_failures else None

    def get(self, voice_id: str) -> ClonedVoice | None:
        voice = self.voices.get(voice_id)
        if voice is not None:
            self.voices.move_to_end(voice_id)
        return voice

    def put(self, voice_id: str, voice: ClonedVoice) -> None:
        self.voices[voice_id] = voice
        self.voices.move_to_end(voice_id)
        while len(self.voices) > self.limit:
            self.voices.popitem(last=False)

    def forget(self, voice_id: str) -> bool:
        return self.voices.pop(voice_id, None) is not None

    def ids(self) -> list[str]:
        return list(reversed(self.voices))


class RayShelf:
    """A replica's view of the shared ``VoiceShelf`` (a ``ClonedShelf``; worker threads only)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def _call(self, method: str, *args: Any) -> Any:
        import ray

        return ray.get(getattr(self.actor, method).remote(*args), timeout=SHELF_SECONDS)

    def get(self, voice_id: str) -> ClonedVoice | None:
        return self._call("get", voice_id)

    def put(self, voice_id: str, voice: ClonedVoice) -> None:
        self._call("put", voice_id, voice)

    def forget(self, voice_id: str) -> bool:
        return self._call("forget", voice_id)

    def ids(self) -> list[str]:
        return self._call("ids")


class Replica:
    """One replica: the model loaded once, then ``pockettts serve``'s app around it."""

    async def __init__(self, spec: ReplicaSpec) -> None:
        import asyncio

        from ray import serve

        from pocketcli.batch.worker import describe_error
        from pocketcli.frontends import logs
        from pocketcli.frontends.backend import load_backend
        from pocketcli.serve.app import create_app

        logs.configure(spec.log_level)  # JSON lines on the replica's stderr (Ray's worker log)
        try:
            backend = await asyncio.to_thread(
                load_backend, spec.request, spec.voice, spec.voice_file
            )
        except Exception as exc:  # the command says why, in one line
            why = f"a replica on {socket.gethostname()} cannot load the model: "
            why += describe_error(exc)
            with contextlib.suppress(Exception):
                await spec.shelf.load_failed.remote(why)
            raise RuntimeError(why) from None
        app = create_app(lambda: backend, spec.settings)
        self.state = app.state.pockettts
        self.state.shelf = RayShelf(spec.shelf)
        self.state.load(lambda: backend)  # before Ray routes a request here
        replica = serve.get_replica_context().replica_id.unique_id
        self.pockettts_app = _with_replica_header(app, replica.encode())

    def __serve_build_asgi_app__(self) -> Any:
        return self.pockettts_app

    def check_health(self) -> None:
        if self.state.load_error is not None:
            raise RuntimeError(self.state.load_error)


def _with_replica_header(app: Any, replica: bytes) -> Any:
    """Each HTTP answer and websocket handshake says which replica made it
    (``X-PocketTTS-Replica``)."""

    async def asgi(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await app(scope, receive, send)

        async def send_marked(message: dict) -> None:
            if message["type"] in ("http.response.start", "websocket.accept"):
                headers = list(message.get("headers", []))
                message = {**message, "headers": [*headers, (REPLICA_HEADER, replica)]}
            await send(message)

        return await app(scope, receive, send_marked)

    return asgi


def application(spec_args: dict[str, Any], scaling: Scaling) -> Any:
    """The bound Ray Serve application (``serve.run`` deploys it)."""
    from ray import serve

    settings = spec_args["settings"]
    ingress = serve.ingress()(Replica)
    deployment = serve.deployment(**scaling.deployment_options(settings))(ingress)
    return deployment.bind(ReplicaSpec(**spec_args))


# A Ray Serve config file (``serve run FILE``, ``serve deploy``, KubeRay's RayService) names
# ``import_path: pocketcli.serve.rayserve:build`` and these ``args`` (``serve``'s flags, with
# underscores), each as the flag takes it.
BUILD_LIMITS = {  # arg -> Limits field, and the type it is read as
    "max_streams": ("max_streams", int),
    "max_queue": ("max_queue", int),
    "max_chars": ("max_chars", int),
    "request_timeout": ("request_seconds", float),
}
BUILD_MODEL = ("language", "model_dir", "precision")
BUILD_OTHER = ("voice", "voice_file", "api_key", "shutdown_timeout", "min_replicas", "max_replicas")
SHARED_SHELF = "voices"  # a config's application: its cloned voices' actor (detached)


def build(args: dict[str, Any]) -> Any:
    """The application of ``serve --ray`` from a Ray Serve config's ``args`` (no command owns
    it: the cluster runs it, and its cloned voices live in the detached actor ``voices`` of
    namespace ``pockettts`` until the cluster stops or it is killed)."""
    import ray

    unknown = sorted(set(args) - set(BUILD_LIMITS) - set(BUILD_MODEL) - set(BUILD_OTHER))
    if unknown:
        known = ", ".join([*BUILD_MODEL, *BUILD_LIMITS, *BUILD_OTHER])
        raise ValueError(f"pockettts: unknown args {', '.join(unknown)} (known: {known})")
    try:
        limits = {
            field: kind(args[arg]) for arg, (field, kind) in BUILD_LIMITS.items() if arg in args
        }
        shutdown = float(args.get("shutdown_timeout", ServeSettings.shutdown_seconds))
        low = int(args.get("min_replicas", defaults.RAY_MIN_REPLICAS))
        high = int(args.get("max_replicas", low))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"pockettts: args: {exc}") from None
    from pocketcli.options import ModelRequest
    from pocketcli.serve.settings import Limits

    settings = ServeSettings(
        limits=Limits(**limits), api_key=args.get("api_key") or None, shutdown_seconds=shutdown
    )
    request = ModelRequest(**{name: args[name] for name in BUILD_MODEL if name in args})
    shelf = (
        ray.remote(num_cpus=0)(VoiceShelf)
        .options(name=SHARED_SHELF, namespace=NAMESPACE, lifetime="detached", get_if_exists=True)
        .remote(settings.limits.max_cloned_voices)
    )
    voice_file = args.get("voice_file")
    spec = {
        "request": request.normalized(),
        "voice": args.get("voice"),
        "voice_file": Path(voice_file) if voice_file else None,
        "settings": settings,
        "shelf": shelf,
    }
    return application(spec, Scaling(low, max(low, high)))


def require_ray_serve() -> None:
    """One line naming the extra when Ray Serve cannot be imported (a bare ``ray`` lacks it)."""
    try:
        import ray.serve  # noqa: F401
    except ImportError:
        raise FieldHint("{ray} needs Ray Serve: pip install 'pockettts[ray]'", "ray") from None


# Ray Serve gives its HTTP proxy 5 s to start before it kills and restarts it; on a loaded
# machine a proxy takes longer (Python, uvicorn and FastAPI imported under a busy CPU) and
# `serve.run` failed with "The actor never ran - it was cancelled before it started
# running". A local Ray's processes inherit these; a cluster's are its own to set.
PATIENT_SERVE = {
    "RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S": "60",
    "RAY_SERVE_PROXY_HEALTH_CHECK_TIMEOUT_S": "30",
}


def join(address: str, local_cpus: int) -> bool:
    """Starts a local Ray (``local``: True, stop it after) or joins the cluster at ``address``."""
    import ray

    from pocketcli.batch.worker import describe_error

    check_reachable(address)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    for name, value in PATIENT_SERVE.items():
        os.environ.setdefault(name, value)
    init = {"include_dashboard": False, "logging_level": logging.ERROR, "log_to_driver": False}
    local = address == RAY_LOCAL
    try:
        if local:
            ray.init(num_cpus=local_cpus, namespace=NAMESPACE, **init)
        else:
            ray.init(address=address, namespace=NAMESPACE, **init)
    except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError...
        where = "start a local Ray instance" if local else f"join the Ray cluster at {address}"
        raise UserError(f"cannot {where}: {describe_error(exc)}") from None
    return local


@dataclass(frozen=True)
class RayServe:
    """What ``pockettts serve --ray`` runs: where, the model, the settings, the scaling."""

    address: str
    request: ModelRequest
    voice: str | None
    voice_file: Path | None
    settings: ServeSettings
    scaling: Scaling
    host: str
    port: int


def run(job: RayServe, log_level: str) -> None:
    """Deploys the application, serves until SIGTERM or Ctrl-C, then drains and stops."""
    import ray

    from pocketcli.frontends import logs

    logs.configure(log_level)
    logging.getLogger("ray.serve").setLevel(logging.WARNING)  # its own INFO lines on stderr
    port = job.port or _free_port(job.host)
    local = join(job.address, max(2, int(job.scaling.max_replicas * job.scaling.cpus_per_replica)))
    stopped: list[int] = []
    deployed = False  # ours to delete at the end (never another command's application)
    try:
        _check_cluster(job.scaling)
        shelf = (
            ray.remote(num_cpus=0)(VoiceShelf)
            .options(name=f"voices-{os.getpid()}")
            .remote(job.settings.limits.max_cloned_voices)
        )
        deployed = True  # from here: a deployment half made is removed too
        _deploy(job, shelf, port, log_level)
        _log_listening(job, port)
        stopped = _wait_for_signal()
    finally:
        _stop(local, deployed, job.settings.shutdown_seconds + STOP_SLACK_SECONDS)
    if deployed:
        names = [signal.Signals(s).name for s in stopped]
        logs.logger().info("stopped", extra={"signal": names[0] if names else None})
    if stopped:
        raise SystemExit(128 + stopped[0])


def _log_listening(job: RayServe, port: int) -> None:
    from pocketcli.frontends import logs

    logs.logger().info(
        "listening",
        extra={
            "url": f"http://{job.host}:{port}",
            "port": port,
            "ray": job.address,
            "replicas": [job.scaling.min_replicas, job.scaling.max_replicas],
            "api_key": bool(job.settings.api_key),
        },
    )


def _check_cluster(scaling: Scaling) -> None:
    """One line where the cluster would refuse the application: another ``pockettts serve
    --ray`` serves there already (a second would replace it), or there are not the CPUs of
    ``--min-replicas`` (Ray Serve would wait for them for ever)."""
    import ray
    from ray import serve

    cpus = ray.cluster_resources().get("CPU", 0.0)
    wanted = scaling.min_replicas * scaling.cpus_per_replica
    if wanted > cpus:
        raise FieldHint(
            f"the Ray cluster has {cpus:g} CPU(s): no room for {scaling.min_replicas} "
            f"replica(s) of {scaling.cpus_per_replica:g} CPU; lower {{min_replicas}}",
            "min_replicas",
        )
    running = serve.status().applications.get(APP_NAME)
    if running is not None and str(running.status).rpartition(".")[2] != "DELETING":
        raise UserError(
            f"the Ray cluster already serves an application named {APP_NAME!r} "
            "(another pockettts serve --ray): stop that one first"
        )


def _stop(local: bool, deployed: bool, seconds: float) -> None:
    """Deletes the application and waits up to ``seconds`` for its replicas to drain their
    streams (Ray gives them longer: ``Scaling.deployment_options``), then stops a local Ray
    (cutting what is left); a cluster's replicas go on draining. A cluster already gone (a
    signal to the whole process group reaches a local Ray's own processes too) must not
    hold the command for Ray's minute of retries: the waiting is a thread's, given up on."""
    import ray
    from ray import serve

    given_up = threading.Event()

    def stop() -> None:
        if deployed:
            with contextlib.suppress(Exception):
                serve.delete(APP_NAME, _blocking=False)
                while not given_up.is_set() and APP_NAME in serve.status().applications:
                    given_up.wait(0.5)
        if local and not given_up.is_set():
            with contextlib.suppress(Exception):
                serve.shutdown()

    thread = threading.Thread(target=stop, name="pockettts-ray-stop", daemon=True)
    thread.start()
    thread.join(seconds)
    given_up.set()  # a thread still inside Ray at exit would start another Ray to reconnect
    thread.join(STOP_SLACK_SECONDS)
    if not thread.is_alive():
        ray.shutdown()


def _deploy(job: RayServe, shelf: Any, port: int, log_level: str) -> None:
    from ray import serve

    limits = job.settings.limits
    http = {
        "host": job.host,
        "port": port,
        "keep_alive_timeout_s": max(1, int(limits.idle_seconds)),
    }
    spec = {
        "request": job.request,
        "voice": job.voice,
        "voice_file": job.voice_file,
        "settings": job.settings,
        "shelf": shelf,
        "log_level": log_level,
    }
    _check_proxy_address(job.host, port)
    try:
        serve.start(http_options=http, logging_config={"log_level": "ERROR"})
        # returns once every replica has loaded the model (or raises: one failed)
        serve.run(application(spec, job.scaling), name=APP_NAME, route_prefix="/")
    except Exception as exc:
        why = _load_failure(shelf)
        if why is not None:
            raise UserError(why) from None
        raise UserError(f"the Ray Serve application did not start: {_first_line(exc)}") from None


def _load_failure(shelf: Any) -> str | None:
    """What the first replica that could not load the model said, if one did."""
    import ray

    try:
        return ray.get(shelf.first_load_failure.remote(), timeout=SHELF_SECONDS)
    except Exception:  # the cluster is gone too: Ray's own words then
        return None


def _check_proxy_address(host: str, port: int) -> None:
    """One line where Ray Serve already runs on the cluster with its proxies on another
    address (an earlier command's): Ray keeps the first and would ignore ours, and this
    command would say it listens where nothing does."""
    from ray.serve.context import _get_global_client

    try:
        client = _get_global_client(raise_if_no_controller_running=False)
    except Exception:  # Ray's own error comes with serve.start then
        return
    if client is None:
        return
    running = client.http_config
    if (running.host, running.port) != (host, port):
        raise FieldHint(
            f"Ray Serve already runs on this cluster with its proxies on "
            f"{running.host}:{running.port}: give {{host}} {running.host} {{port}} "
            f"{running.port}, or stop Ray Serve there first (serve shutdown)",
            "host",
            "port",
        )


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


def _wait_for_signal() -> list[int]:
    """Blocks until SIGTERM or SIGINT; returns the one that came."""
    came: list[int] = []
    done = threading.Event()

    def stop(signum: int, _frame: Any) -> None:
        came.append(signum)
        done.set()

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        while not done.wait(1.0):
            pass
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return came


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
