"""The same benchmark on Kyutai's pocket-tts, for ``--compare-reference``.

pocket-tts runs in a child process (spawned, so torch's threads and memory
are its own and its peak RSS is measured alone) on the same checkpoint,
config and voice. The parent drives it phrase by phrase: ours speaks a
phrase, then pocket-tts speaks the same text, so the two sides alternate run
by run and share whatever load the machine has. Needs the ``test`` extra
(torch and pocket-tts).
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from pocketcli.errors import FieldError, FieldHint, UserError


def _serve(job: dict[str, Any], inbox, outbox) -> None:  # runs in the spawned process
    """Load, warm up, then speak each text received until ``None``; report every step."""
    try:
        speak, ready = _load(job)
        outbox.put(("ok", ready))
        while (text := inbox.get()) is not None:
            outbox.put(("ok", speak(text)))
        outbox.put(("ok", _finish()))
    except BaseException as exc:  # report, never hang the parent
        outbox.put(("error", f"{type(exc).__name__}: {exc}"))


def _load(job: dict[str, Any]):
    import logging

    logging.disable(logging.WARNING)
    import torch
    from pocket_tts.models.tts_model import TTSModel

    from pocketcli.bench.runner import WARM_UP_TEXT

    start = time.perf_counter()
    model = TTSModel.load_model(config=job["config_path"], quantize=job["quantize"])
    if job["temperature"] is not None:
        model.temp = job["temperature"]
    if job["voice"]:
        voice = model.get_state_for_audio_prompt(Path(job["voice"]))
    else:
        from pocket_tts.modules.stateful_module import init_states

        voice = init_states(model.flow_lm, batch_size=1, sequence_length=1)
    cold = time.perf_counter() - start

    def speak(text: str) -> dict[str, float]:
        torch.manual_seed(0)
        t0 = time.perf_counter()
        first = None
        samples = 0
        for chunk in model.generate_audio_stream(voice, text):
            if first is None:
                first = time.perf_counter() - t0
            samples += int(chunk.shape[-1])
        total = time.perf_counter() - t0
        return {
            "ttft_ms": 1000 * (first or total),
            "synth_ms": 1000 * total,
            "audio_s": samples / model.sample_rate,
        }

    first_synth = speak(WARM_UP_TEXT)["synth_ms"]
    return speak, {"cold_start_s": cold, "first_synth_ms": first_synth}


def _finish() -> dict[str, Any]:
    import torch

    from pocketcli.bench.runner import peak_rss_mb

    return {"peak_rss_mb": peak_rss_mb(), "torch_threads": int(torch.get_num_threads())}


def _version() -> str:
    from importlib.metadata import version

    return version("pocket-tts")


def reference_config(manifest, pack_dir: Path, checkpoint: Path, directory: Path) -> Path:
    """A pocket-tts config YAML for the pack's own weights and tokenizer."""
    raw = dict(manifest.config.raw)
    raw.pop("weights_path_without_voice_cloning", None)
    raw["weights_path"] = str(checkpoint)
    flow = dict(raw["flow_lm"])
    table = dict(flow["lookup_table"])
    table["tokenizer_path"] = str(pack_dir / manifest.tokenizer_file)
    table["tokenizer"] = manifest.tokenizer_kind
    flow["lookup_table"] = table
    flow.pop("weights_path", None)
    raw["flow_lm"] = flow
    path = directory / "reference-config.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


class ReferenceSide:
    """pocket-tts on the pack's own checkpoint, in a child process, one phrase per call.

    Use as a context manager: entering loads the model (its cold start) and
    warms it up; ``speak(text)`` times one phrase; ``summary()`` ends the child
    and returns the figures the report prints beside ours.
    """

    def __init__(
        self,
        pack_dir: Path,
        *,
        voice: Path | None,
        temperature: float | None,
        quantize: bool,
        timeout_s: float = 3600,
    ) -> None:
        from pocketcli.packs.manifest import PackManifest

        # Only look for the packages: importing them here would load torch into this
        # process and count its memory as ours.
        if any(importlib.util.find_spec(name) is None for name in ("pocket_tts", "torch")):
            raise FieldHint(
                "{compare_reference} needs Kyutai's pocket-tts and torch:"
                " pip install 'pockettts[test]'",
                "compare_reference",
            )
        manifest = PackManifest.read(pack_dir)
        checkpoint = manifest.source.get("checkpoint_path")
        if checkpoint:
            checkpoint = str((pack_dir / checkpoint).resolve())  # relative to the pack, or absolute
        if not checkpoint or not Path(checkpoint).is_file():
            raise UserError(
                "this pack does not record a local checkpoint to compare against "
                f"(pack.json source: {manifest.source or 'empty'})"
            )
        if voice is not None and voice.suffix != ".safetensors":
            raise FieldError(
                "{compare_reference} needs a .safetensors voice (pocket-tts cannot "
                "read FluidAudio .bin voices)",
                "compare_reference",
            )
        self._manifest, self._pack_dir, self._checkpoint = manifest, pack_dir, Path(checkpoint)
        self._voice, self._temperature, self.quantize = voice, temperature, quantize
        self._timeout = timeout_s
        self._phrases: list[dict[str, Any]] = []
        self._ready: dict[str, Any] = {}

    def __enter__(self) -> ReferenceSide:
        self._tmp = tempfile.TemporaryDirectory(prefix="pockettts-ref-")
        config_path = reference_config(
            self._manifest, self._pack_dir, self._checkpoint, Path(self._tmp.name)
        )
        job = {
            "config_path": str(config_path),
            "quantize": self.quantize,
            "voice": str(self._voice) if self._voice else None,
            "temperature": self._temperature,
        }
        ctx = multiprocessing.get_context("spawn")
        self._inbox, self._outbox = ctx.Queue(), ctx.Queue()
        self._child = ctx.Process(target=_serve, args=(job, self._inbox, self._outbox), daemon=True)
        self._child.start()
        try:
            self._ready = self._reply()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _reply(self) -> Any:
        status, payload = self._outbox.get(timeout=self._timeout)
        if status != "ok":
            raise UserError(f"pocket-tts failed: {payload}")
        return payload

    def speak(self, text: str) -> dict[str, Any]:
        self._inbox.put(text)
        result = {"text": text, **self._reply()}
        self._phrases.append(result)
        return result

    def summary(self) -> dict[str, Any]:
        from pocketcli.bench.runner import percentile

        self._inbox.put(None)
        final = self._reply()
        ttfts = [p["ttft_ms"] for p in self._phrases]
        synths = [p["synth_ms"] for p in self._phrases]
        audio = sum(p["audio_s"] for p in self._phrases)
        return {
            "label": f"pocket-tts {_version()}" + (" --quantize" if self.quantize else ""),
            **self._ready,
            "ttft_ms_p50": percentile(ttfts, 50),
            "ttft_ms_p95": percentile(ttfts, 95),
            "synth_ms_p50": percentile(synths, 50),
            "synth_ms_p95": percentile(synths, 95),
            "agg_rtfx": audio / (sum(synths) / 1000) if synths and sum(synths) > 0 else 0.0,
            "audio_s": audio,
            **final,
            "cpu_count": os.cpu_count(),
            "phrases": self._phrases,
        }

    def __exit__(self, *exc: object) -> None:
        if self._child.is_alive():
            self._inbox.put(None)  # ends the child's loop if summary() was not reached
        self._child.join(timeout=30)
        if self._child.is_alive():
            self._child.kill()
        self._tmp.cleanup()
