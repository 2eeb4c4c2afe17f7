"""The same benchmark on Kyutai's pocket-tts, for ``--compare-reference``.

It runs in a child process (spawned, so torch's threads and memory are its
own and its peak RSS is measured alone) within the same benchmark run, on
the same checkpoint, config, voice and phrases, so ratios hold on a noisy
machine. Needs the ``test`` extra (torch and pocket-tts).
"""

from __future__ import annotations

import multiprocessing
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from pocketcli.errors import UserError


def _child(job: dict[str, Any], queue) -> None:  # runs in the spawned process
    try:
        queue.put(("ok", _measure(job)))
    except BaseException as exc:  # report, never hang the parent
        queue.put(("error", f"{type(exc).__name__}: {exc}"))


def _measure(job: dict[str, Any]) -> dict[str, Any]:
    import logging

    logging.disable(logging.WARNING)
    import numpy as np
    import torch
    from pocket_tts.models.tts_model import TTSModel

    from pocketcli.bench.runner import WARM_UP_TEXT, peak_rss_mb, percentile

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

    def speak(text: str) -> tuple[float, float, int]:
        torch.manual_seed(0)
        t0 = time.perf_counter()
        first = None
        samples = 0
        for chunk in model.generate_audio_stream(voice, text):
            if first is None:
                first = time.perf_counter() - t0
            samples += int(chunk.shape[-1])
        total = time.perf_counter() - t0
        return first or total, total, samples

    _, first_synth, _ = speak(WARM_UP_TEXT)
    ttfts, synths, audio = [], [], 0.0
    for text in job["phrases"]:
        ttft, total, samples = speak(text)
        ttfts.append(1000 * ttft)
        synths.append(1000 * total)
        audio += samples / model.sample_rate
    return {
        "label": f"pocket-tts {_version()}" + (" --quantize" if job["quantize"] else ""),
        "cold_start_s": cold,
        "first_synth_ms": 1000 * first_synth,
        "ttft_ms_p50": percentile(ttfts, 50),
        "ttft_ms_p95": percentile(ttfts, 95),
        "synth_ms_p50": percentile(synths, 50),
        "synth_ms_p95": percentile(synths, 95),
        "agg_rtfx": audio / (sum(synths) / 1000) if synths else 0.0,
        "peak_rss_mb": peak_rss_mb(),
        "audio_s": audio,
        "torch_threads": int(np.int64(torch.get_num_threads())),
    }


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


def run_reference(
    pack_dir: Path,
    phrases: list[str],
    *,
    voice: Path | None,
    temperature: float | None,
    quantize: bool,
    timeout_s: float = 3600,
) -> dict[str, Any]:
    from pocketcli.packs.manifest import PackManifest

    try:
        import pocket_tts  # noqa: F401
    except ImportError:
        raise UserError(
            "--compare-reference needs Kyutai's pocket-tts and torch: pip install 'pockettts[test]'"
        ) from None
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
        raise UserError(
            "--compare-reference needs a .safetensors voice (pocket-tts cannot "
            "read FluidAudio .bin voices)"
        )
    with tempfile.TemporaryDirectory(prefix="pockettts-ref-") as tmp:
        config_path = reference_config(manifest, pack_dir, Path(checkpoint), Path(tmp))
        job = {
            "config_path": str(config_path),
            "quantize": quantize,
            "phrases": phrases,
            "voice": str(voice) if voice else None,
            "temperature": temperature,
        }
        ctx = multiprocessing.get_context("spawn")
        queue = ctx.Queue()
        child = ctx.Process(target=_child, args=(job, queue), daemon=True)
        child.start()
        try:
            status, payload = queue.get(timeout=timeout_s)
        finally:
            child.join(timeout=30)
            if child.is_alive():
                child.kill()
    if status != "ok":
        raise UserError(f"pocket-tts failed: {payload}")
    return payload
