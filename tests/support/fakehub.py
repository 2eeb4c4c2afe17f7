"""A stand-in for the Hugging Face Hub on 127.0.0.1, spoken to by the real huggingface_hub.

It answers the requests huggingface_hub 2.x makes (read from its source):

- ``HEAD``/``GET /{org}/{name}/resolve/{revision}/{path}``: for git files a 200 with
  ``X-Repo-Commit``, ``ETag`` (the git blob sha1) and the body; for LFS files a 302
  to a second server (the "CDN", another port, hence another origin that the client
  does not follow on HEAD) with ``X-Linked-Etag`` (the sha256) and ``X-Linked-Size``;
- ``GET /api/models/{repo}/revision/{rev}`` (``repo_info``) and
  ``GET /api/models/{repo}/tree/{rev}`` (``list_repo_tree``), which
  ``snapshot_download`` uses;
- ``GET /raw/<name>``: a plain web file (a config YAML given by https URL);
- errors with the ``X-Error-Code`` headers the client maps to its exception types.

Faults are switched on per test: ``gated`` repos answer 401 GatedRepo,
``forbidden`` repos 403, ``missing`` paths 404, ``drop_after`` cuts the first
download of a file after some bytes (the retry must resume with Range),
``corrupt`` serves other bytes than the announced sha256, ``hang`` accepts
connections and never answers. Every request is logged, so tests can assert
what was (not) fetched. Servers stop at teardown; idle and hanging handlers
time out on their own.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlparse

import numpy as np
from safetensors.numpy import load_file

from tests.support import tensorfiles
from tests.support.paths import TESTS

ROOT = TESTS  # fixtures/ and data/
TINY = ROOT / "fixtures" / "tiny"
TOKENIZER_MODEL = ROOT / "data" / "tokenizer-en" / "tokenizer.model"
TOKENIZER_JSON = ROOT / "data" / "tokenizer-en" / "tokenizer.json"
GIT_SUFFIXES = (".json", ".yaml", ".yml", ".txt", ".md", ".mil")
HANG_LIMIT = 20.0  # a hanging handler gives up by itself after this long
IDLE_TIMEOUT = 5.0  # keep-alive connections close after this long idle


def git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_lfs(path: str) -> bool:
    return not path.endswith(GIT_SUFFIXES)


@dataclass
class Logged:
    server: str
    method: str
    path: str
    range: str | None


@dataclass
class FakeHub:
    repos: dict[str, dict[str, bytes]] = field(default_factory=dict)
    raw: dict[str, bytes] = field(default_factory=dict)  # plain files under /raw/
    gated: set[str] = field(default_factory=set)
    forbidden: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)  # "repo/path"
    drop_after: dict[str, int] = field(default_factory=dict)  # "repo/path" -> bytes
    corrupt: set[str] = field(default_factory=set)  # "repo/path"
    hang: bool = False
    trickle: dict[str, float] = field(default_factory=dict)  # "repo/path" -> s between bytes
    log: list[Logged] = field(default_factory=list)
    url: str = ""
    cdn_url: str = ""
    stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, repo: str, path: str, data: bytes) -> None:
        self.repos.setdefault(repo, {})[path] = data

    def commit(self, repo: str) -> str:
        return hashlib.sha1(f"main of {repo}".encode()).hexdigest()

    def record(self, server: str, method: str, path: str, range_: str | None) -> None:
        with self._lock:
            self.log.append(Logged(server, method, unquote(path), range_))

    def requests(self, contains: str = "") -> list[Logged]:
        with self._lock:
            return [r for r in self.log if contains in r.path]

    def clear_log(self) -> None:
        with self._lock:
            self.log.clear()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, hub: FakeHub, name: str) -> None:
        self.hub = hub
        self.name = name
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        pass

    @property
    def hub(self) -> FakeHub:
        return self.server.hub

    def do_HEAD(self) -> None:  # noqa: N802 - stdlib hook name
        self._handle(body=False)

    def do_GET(self) -> None:  # noqa: N802 - stdlib hook name
        self._handle(body=True)

    def _handle(self, body: bool) -> None:
        self.hub.record(self.server.name, self.command, self.path, self.headers.get("Range"))
        if self.hub.hang:
            self.hub.stop.wait(HANG_LIMIT)
            self.close_connection = True
            return
        path = urlparse(self.path).path
        if self.server.name == "cdn":
            self._cdn(path, body)
        elif path.startswith("/api/models/"):
            self._api(path)
        elif path.startswith("/raw/"):
            data = self.hub.raw.get(path.removeprefix("/raw/"))
            if data is None:
                return self._error(404, None)
            self._reply(200, {"Content-Type": "text/plain"}, data, body)
        else:
            self._resolve(path, body)

    # --- responses -------------------------------------------------------------------

    def _reply(
        self, status: int, headers: dict[str, str], data: bytes = b"", body: bool = True
    ) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body and data:
            self.wfile.write(data)

    def _error(self, status: int, code: str | None, repo: str = "") -> None:
        headers = {"Content-Type": "application/json"}
        if code:
            headers["X-Error-Code"] = code
        if repo in self.hub.repos:
            headers["X-Repo-Commit"] = self.hub.commit(repo)
        self._reply(
            status,
            headers,
            json.dumps({"error": code or str(status)}).encode(),
            body=self.command != "HEAD",
        )

    def _json(self, value: object) -> None:
        self._reply(200, {"Content-Type": "application/json"}, json.dumps(value).encode())

    # --- the Hub ---------------------------------------------------------------------

    def _revision(self, repo: str, revision: str) -> str | None:
        if re.fullmatch(r"[0-9a-f]{40}", revision):
            return revision
        return self.hub.commit(repo) if revision == "main" else None

    def _resolve(self, path: str, body: bool) -> None:
        m = re.fullmatch(r"/(?:datasets/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if m is None:
            return self._error(404, None)
        repo, revision, name = m.group(1), unquote(m.group(2)), unquote(m.group(3))
        files = self.hub.repos.get(repo)
        if files is None:
            return self._error(401, "RepoNotFound")
        if repo in self.hub.gated:
            return self._error(401, "GatedRepo", repo)
        if repo in self.hub.forbidden:
            return self._error(403, None, repo)
        commit = self._revision(repo, revision)
        if commit is None:
            return self._error(404, "RevisionNotFound", repo)
        key = f"{repo}/{name}"
        if name not in files or key in self.hub.missing:
            return self._error(404, "EntryNotFound", repo)
        data = files[name]
        headers = {"X-Repo-Commit": commit, "ETag": f'"{git_sha1(data)}"'}
        if is_lfs(name):
            digest = sha256(data)
            headers.update(
                {
                    "X-Linked-Etag": f'"{digest}"',
                    "X-Linked-Size": str(len(data)),
                    "Location": f"{self.hub.cdn_url}/cdn/{digest}?key={quote(key)}",
                }
            )
            return self._reply(302, headers, body=False)
        self._reply(200, headers, data, body)

    def _api(self, path: str) -> None:
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/(revision|tree)/([^/]+)(/.*)?", path)
        if m is None:
            return self._error(404, None)
        repo, kind, revision = m.group(1), m.group(2), unquote(m.group(3))
        files = self.hub.repos.get(repo)
        if files is None:
            return self._error(401, "RepoNotFound")
        commit = self._revision(repo, revision)
        if commit is None:
            return self._error(404, "RevisionNotFound", repo)
        if kind == "revision":
            return self._json(
                {
                    "id": repo,
                    "sha": commit,
                    "private": False,
                    "siblings": [{"rfilename": p} for p in sorted(files)],
                }
            )
        recursive = parse_qs(urlparse(self.path).query).get("recursive", ["False"])[0]
        assert recursive.lower() == "true", "snapshot_download lists the tree recursively"
        entries: list[dict] = []
        folders = sorted(
            {str(Path(p).parents[i]) for p in files for i in range(len(Path(p).parents) - 1)}
        )
        entries += [
            {"type": "directory", "oid": git_sha1(d.encode()), "size": 0, "path": d}
            for d in folders
        ]
        for name, data in sorted(files.items()):
            entry = {"type": "file", "oid": git_sha1(data), "size": len(data), "path": name}
            if is_lfs(name):
                entry["lfs"] = {"oid": sha256(data), "size": len(data), "pointerSize": 134}
            entries.append(entry)
        self._json(entries)

    # --- the CDN ---------------------------------------------------------------------

    def _cdn(self, path: str, body: bool) -> None:
        key = parse_qs(urlparse(self.path).query).get("key", [""])[0]
        parts = key.split("/")
        repo, name = "/".join(parts[:2]), "/".join(parts[2:])
        data = self.hub.repos.get(repo, {}).get(name)
        if data is None or sha256(data) != path.rsplit("/", 1)[-1]:
            return self._error(404, None)
        if key in self.hub.corrupt:
            data = bytes(b ^ 0xFF for b in data[:16]) + data[16:]
        start = 0
        status, headers = (
            200,
            {"Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"},
        )
        ranged = self.headers.get("Range")
        if ranged:
            start = int(re.fullmatch(r"bytes=(\d+)-", ranged).group(1))
            status = 206
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        part = data[start:]
        pause = self.hub.trickle.get(key) if body else None
        if pause is not None:  # one byte at a time, slower than any sane speed limit
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(part)))
            self.end_headers()
            for i in range(len(part)):
                if self.hub.stop.wait(pause):
                    break
                try:
                    self.wfile.write(part[i : i + 1])
                    self.wfile.flush()
                except OSError:
                    break
            self.close_connection = True
            return
        cut = self.hub.drop_after.pop(key, None) if body else None
        if cut is None:
            return self._reply(status, headers, part, body)
        # Announce the whole file, send the first `cut` bytes, then close cleanly.
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(part)))
        self.end_headers()
        self.wfile.write(part[:cut])
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True


@contextmanager
def running(hub: FakeHub) -> Iterator[FakeHub]:
    """Starts the Hub and its CDN on 127.0.0.1 (ports chosen by the OS); stops both after."""
    hub_server, cdn_server = _Server(hub, "hub"), _Server(hub, "cdn")
    hub.url = f"http://127.0.0.1:{hub_server.server_address[1]}"
    hub.cdn_url = f"http://127.0.0.1:{cdn_server.server_address[1]}"
    threads = [
        threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        for s in (hub_server, cdn_server)
    ]
    for t in threads:
        t.start()
    try:
        yield hub
    finally:
        hub.stop.set()
        for s in (hub_server, cdn_server):
            s.shutdown()
            s.server_close()
        for t in threads:
            t.join(timeout=5)


# --- the synthetic repositories ----------------------------------------------------------

CLONING = "kyutai/pocket-tts"
NO_CLONING = "kyutai/pocket-tts-without-voice-cloning"
COREML = "FluidInference/pocket-tts-coreml"
TEST_REPO = "pockettts-tests/tiny"
TINY_REVISION = "0123456789abcdef0123456789abcdef01234567"
TINY_CONFIG = f"hf://{TEST_REPO}/tiny.yaml@{TINY_REVISION}"
# The same model with its weights in BF16, as Kyutai publishes checkpoints.
TINY_BF16_CONFIG = f"hf://{TEST_REPO}/tiny_bf16.yaml@{TINY_REVISION}"
# English voices served in the other published formats (the rest are Kyutai F32 states):
BF16_STATE_VOICE = "jane"  # the fixture voice state with BF16 caches and an extra tensor
TINY_PROMPT_VOICE = "cosette"  # an 'audio_prompt' [1, 20, 64] BF16 embedding (tiny width)
REAL_PROMPT_VOICE = "fantine"  # Kyutai's real 2026-01 'audio_prompt' [1, 132, 1024]
ENGLISH_TRAINED = (
    "alba",
    "anna",
    "azelma",
    "bill_boerst",
    "caro_davy",
    "charles",
    "cosette",
    "eponine",
    "eve",
    "fantine",
    "george",
    "jane",
    "javert",
    "jean",
    "marius",
    "mary",
    "michael",
    "paul",
    "peter_yearsley",
    "stuart_bell",
    "vera",
)
VOICES_26 = (*ENGLISH_TRAINED, "estelle", "lola", "juergen", "rafael", "giovanni")


def _random(seed: int, size: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes()


def tiny_config(revision: str, weights: str = "tiny") -> bytes:
    """The committed tiny model's config, with hf:// sources on the fake Hub."""
    import yaml

    raw = yaml.safe_load((TINY / "config.yaml").read_text(encoding="utf-8"))
    raw["weights_path"] = f"hf://{CLONING}/languages/{weights}/model.safetensors@{revision}"
    raw["weights_path_without_voice_cloning"] = (
        f"hf://{NO_CLONING}/languages/{weights}/model.safetensors@{revision}"
    )
    raw["flow_lm"]["lookup_table"]["tokenizer_path"] = (
        f"hf://{NO_CLONING}/languages/tiny/tokenizer.model@{revision}"
    )
    return yaml.safe_dump(raw, sort_keys=False).encode()


def _safetensors_bytes(tensors: dict[str, tuple[str, tuple[int, ...], bytes]]) -> bytes:

    with tempfile.TemporaryDirectory() as tmp:
        return tensorfiles.write(Path(tmp) / "x.safetensors", tensors).read_bytes()


def bf16_checkpoint() -> bytes:
    """The tiny model's weights as BF16, every tensor (Kyutai's released checkpoints are)."""
    weights = load_file(str(TINY / "model.safetensors"))
    return _safetensors_bytes({k: tensorfiles.encode(v, "BF16") for k, v in weights.items()})


def bf16_voice_state() -> bytes:
    """The fixture voice state with BF16 caches, plus a tensor no voice state has."""
    state = load_file(str(TINY / "voice.safetensors"))
    tensors = {
        k: tensorfiles.encode(v, "BF16" if k.endswith("/cache") else "I64")
        for k, v in state.items()
    }
    tensors["extra/notes"] = tensorfiles.encode(np.zeros(3, np.float32), "F32")
    return _safetensors_bytes(tensors)


def tiny_prompt_voice() -> bytes:
    """A tiny-width 'audio_prompt' [1, 20, 64] in BF16, as Kyutai's 2026-01 voices are laid out."""
    cond = np.random.default_rng(20).standard_normal((1, 20, 64)).astype(np.float32)
    return _safetensors_bytes({"audio_prompt": tensorfiles.encode(cond, "BF16")})


def add_kyutai(hub: FakeHub, languages: tuple[str, ...] = ("english",)) -> None:
    """Kyutai's layout: ``languages/<lang>/{model.safetensors, tokenizer.*, embeddings/}``.

    ``languages/tiny`` holds the fixture's float32 weights, ``languages/tiny_bf16`` and
    every catalogue language the same weights in BF16 (as Kyutai publishes them).
    """
    weights = (TINY / "model.safetensors").read_bytes()
    bf16 = bf16_checkpoint()
    voice = (TINY / "voice.safetensors").read_bytes()
    special = {
        BF16_STATE_VOICE: bf16_voice_state(),
        TINY_PROMPT_VOICE: tiny_prompt_voice(),
        REAL_PROMPT_VOICE: (
            ROOT / "data" / "voices-en-2026-01" / "fantine.safetensors"
        ).read_bytes(),
    }
    for repo in (CLONING, NO_CLONING):
        hub.add(repo, "languages/tiny/model.safetensors", weights)
        hub.add(repo, "languages/tiny_bf16/model.safetensors", bf16)
        for lang in languages:
            hub.add(repo, f"languages/{lang}/model.safetensors", bf16)
    hub.add(NO_CLONING, "languages/tiny/tokenizer.model", TOKENIZER_MODEL.read_bytes())
    for lang in languages:
        hub.add(NO_CLONING, f"languages/{lang}/tokenizer.json", TOKENIZER_JSON.read_bytes())
        for i, name in enumerate(VOICES_26):
            # Distinct bytes per voice and language, alba being the real fixture state.
            data = voice if name == "alba" else voice + _random(i, 64) + lang.encode()
            if lang == "english" and name in special:
                data = special[name]
            hub.add(NO_CLONING, f"languages/{lang}/embeddings/{name}.safetensors", data)
    hub.add(TEST_REPO, "tiny.yaml", tiny_config(TINY_REVISION))
    hub.add(TEST_REPO, "tiny_bf16.yaml", tiny_config(TINY_REVISION, "tiny_bf16"))
    hub.raw["tiny.yaml"] = tiny_config(TINY_REVISION)


def _mlmodelc(hub: FakeHub, prefix: str, seed: int) -> None:
    hub.add(COREML, f"{prefix}/coremldata.bin", _random(seed, 2048))
    hub.add(COREML, f"{prefix}/weights/weight.bin", _random(seed + 1, 8192))
    hub.add(COREML, f"{prefix}/model.mil", b"program(1.0)\n")
    hub.add(COREML, f"{prefix}/metadata.json", b'[{"shortDescription": "fake"}]')


COREML_MODELS = (
    "cond_prefill",
    "flowlm_step",
    "flowlm_stepv2",
    "flow_decoder_fused",
    "mimi_decoder",
    "cond_prefill_ane",
    "flowlm_step_ane",
    "mimi_encoderv3",
)


def add_coreml(hub: FakeHub, languages: tuple[str, ...] = ("english", "spanish_24l")) -> None:
    """FluidAudio's layout: ``v2.1/<lang>/`` with models, sources, constants and voices."""
    seed = 100
    for lang in languages:
        base = f"v2.1/{lang}"
        for model in COREML_MODELS:
            seed += 2
            _mlmodelc(hub, f"{base}/{model}.mlmodelc", seed)
            hub.add(COREML, f"{base}/{model}.mlpackage/Manifest.json", b"{}")
            hub.add(COREML, f"{base}/{model}.mlpackage/Data/weight.bin", _random(seed, 4096))
        hub.add(COREML, f"{base}/constants/bos_emb.npy", _random(seed + 7, 256))
        hub.add(COREML, f"{base}/constants_bin/bos_emb.bin", _random(seed + 8, 128))
        hub.add(COREML, f"{base}/constants_bin/text_embed_table.bin", _random(seed + 9, 4096))
        hub.add(COREML, f"{base}/constants_bin/tokenizer.model", TOKENIZER_MODEL.read_bytes())
        for i, name in enumerate(VOICES_26):
            hub.add(
                COREML,
                f"{base}/constants_bin/{name}.safetensors",
                _random(seed + 20 + i, 512) + lang.encode(),
            )
        hub.add(COREML, f"{base}/manifest.json", b'{"version": "2.1"}')
        hub.add(COREML, f"{base}/verify.wav", _random(seed + 60, 1024))
    _mlmodelc(hub, "mimi_encoderv2.mlmodelc", 7)
    hub.add(COREML, "README.md", b"fake pack repository\n")


def hub_env(hub: FakeHub, tmp: Path, timeout: float = 5.0) -> dict[str, str]:
    """Environment that points huggingface_hub and pockettts at the fake Hub and tmp caches."""
    return {
        "HF_ENDPOINT": hub.url,
        "HF_HOME": str(tmp / "hf-home"),
        "POCKETTTS_CACHE": str(tmp / "pockettts-cache"),
        "POCKETTTS_HUB_TIMEOUT": str(timeout),
        # No user-agent telemetry: it fetches a registry from the endpoint.
        "HF_HUB_DISABLE_TELEMETRY": "1",
    }


CLEARED = (
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "HF_ASSETS_CACHE",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_TOKEN",
    "XDG_CACHE_HOME",
    "POCKETTTS_DEBUG",
)


def subprocess_env(hub: FakeHub, tmp: Path, **extra: str) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(hub_env(hub, tmp))
    env.update(extra)
    return env
