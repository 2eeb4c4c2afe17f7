"""``pockettts tts --input-file``: from the command line's choices to a batch run.

One process (no ``--jobs``), ``--jobs N|auto`` worker processes, or ``--ray
[ADDRESS]`` actors; the driver loads the model once itself (to pick the voice
and identify model and voice for the manifest's keys) and, in the one-process
mode, makes the lines with it.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pocketcli.batch.argv import RAY_LOCAL
from pocketcli.batch.jobs import (
    auto_split,
    auto_streams,
    available_cores,
    bound_workers,
    parse_jobs,
    parse_streams,
    threads_for,
)
from pocketcli.batch.parse import parse_batch
from pocketcli.batch.plan import BatchSettings, fresh_base_seed, model_id, voice_id
from pocketcli.batch.runner import InProcess, run_batch
from pocketcli.batch.worker import LineWorker, ModelSpec
from pocketcli.cli import clickcompat as click
from pocketcli.options import ModelRequest, SpeakOptions

if TYPE_CHECKING:
    from pocketcli.api import PocketTTS


@dataclass(frozen=True)
class VoiceFlags:
    voice: str | None
    voice_file: Path | None
    clone_voice: Path | None
    save_voice: Path | None


def run_batch_command(
    choice,
    data: bytes,
    output_dir: Path,
    options: SpeakOptions,
    voices: VoiceFlags,
    *,
    jobs: str | None,
    ray: str | None,
    streams: str | None = None,
    overwrite: bool,
    quiet: bool,
    accept_refused: bool = False,
    on_warning=None,
    beside: tuple[str, ...] = (),
) -> int:
    """Runs the batch; returns the exit status (1 if any line failed; lines refused for
    their text do not count with ``accept_refused``). ``beside``: the word files written
    beside each line's WAV ("json", "srt", "vtt"; ``options.words`` asks for them)."""
    from pocketcli.cli.model_options import choose_voice, load_model

    try:
        workers = parse_jobs(jobs)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--jobs") from None
    try:
        in_flight = parse_streams(streams)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--streams") from None
    if streams is not None and (jobs is not None or ray is not None):
        raise click.UsageError("--streams is for the one-process batch: drop --jobs or --ray")
    if ray is not None:
        from pocketcli.batch.ray_runner import import_ray

        import_ray()  # without the extra: say what to install before loading anything
    items = parse_batch(data)
    tts = load_model(choice, quiet=quiet)
    if options.words:
        tts._check_words()  # a model that cannot time words: one line, before any line
    chosen = choose_voice(
        tts,
        voices.voice,
        voices.voice_file,
        voices.clone_voice,
        voices.save_voice,
        on_warning=on_warning,
    )
    settings = BatchSettings(
        options=options,
        base_seed=options.seed if options.seed is not None else fresh_base_seed(),
        seed_given=options.seed is not None,
        model_id=model_id(tts),
        voice_id=voice_id(chosen.state),
        language=tts.language,
        voice_name=chosen.name,
        beside=beside,
    )
    cores = available_cores()
    precision = str(choice.precision or "")
    count, threads = _split(workers, ray, precision, len(items), cores, quiet)

    if ray is None and count is None:
        lines_at_once = auto_streams(tts.runtime) if in_flight is None else in_flight

        def start(n: int, note):
            return InProcess(LineWorker(tts, chosen.state, options), streams=lines_at_once)

    else:
        model_spec, voice = worker_spec(choice, tts, threads), chosen.state
        del tts, chosen  # the workers load their own; free the driver's copy
        gc.collect()

        def start(n: int, note):
            if ray is not None:
                from pocketcli.batch.ray_runner import RayExecutor

                actors = None if count is None else min(count, n)
                return RayExecutor(ray, model_spec, voice, options, actors, threads, note, cores)
            from pocketcli.batch.processes import ProcessExecutor

            return ProcessExecutor(model_spec, voice, options, min(count, n), note)

    report = run_batch(items, settings, output_dir, start, overwrite=overwrite, quiet=quiet)
    return report.exit_status(accept_refused)


def worker_spec(choice: ModelRequest, tts: PocketTTS, threads: int) -> ModelSpec:
    """How a worker opens the model the driver opened: the driver's request and pack, their
    paths made absolute (a Ray worker runs in Ray's working folder, or on another node,
    where a path relative to this command's folder names nothing)."""
    from pocketcli.batch.cluster import absolute, absolute_request

    pack_dir = absolute(None if tts._pack_dir is None else Path(tts._pack_dir))
    request = absolute_request(choice)
    return ModelSpec(request, None if pack_dir is None else str(pack_dir), tts.language, threads)


def _split(
    workers: int | str | None, ray: str | None, precision: str, lines: int, cores: int, quiet: bool
) -> tuple[int | None, int]:
    """(worker count, None for this process or a whole cluster; threads per worker)."""
    from pocketcli.cli.model_options import notice

    if ray is not None and ray != RAY_LOCAL and workers in (None, "auto"):
        # a cluster: as many workers as its CPUs hold at the best threads per worker
        return None, auto_split(precision, lines, cores)[1]
    if workers == "auto" or (ray is not None and workers is None):
        count, threads = auto_split(precision, lines, cores)
        if count == 1 and ray is None:  # one worker: this process, no start-up to pay
            return None, threads
        return count, threads
    if isinstance(workers, int):
        if ray is None:
            bounded, why = bound_workers(workers, precision, cores)
            if why and not quiet:
                notice(f"--jobs {workers} lowered to {bounded}: {why}")
            workers = bounded
        return workers, threads_for(workers, cores)
    return None, threads_for(1, cores)
