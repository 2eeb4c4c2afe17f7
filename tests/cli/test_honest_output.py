"""Honest output and safe writes under hostile input: what is at the path decides how it
is written, formats, numbers that cannot make audio, arguments. Real console-script runs on
the committed tiny pack, real files, FIFOs, sockets, devices and a real tmpfs where the
machine lets us mount one."""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pocketcli.atomic import atomic_path
from pocketcli.audio.output import FORMATS, encode_stream, format_for, open_audio_writer
from pocketcli.errors import ModelOutputError, UserError
from tests.support.cli import SCRIPT, run


def tts(pack_dir, *args: str, stdin: bytes | None = None):
    return run("tts", *args, "--model-dir", str(pack_dir), "-q", stdin=stdin)


def one_line_error(r) -> str:
    text = r.stderr.decode()
    assert "Traceback" not in text and text.count("\n") == 1, text
    return text


# --- what is at the path decides how it is written ---------------------------------


def test_dev_null_is_written_into_never_replaced(pack_dir) -> None:
    before = os.stat("/dev/null")
    r = tts(pack_dir, "Timing a run.", "-o", "/dev/null", "--metrics", "/dev/null")
    assert r.returncode == 0, r.stderr
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert after.st_ino == before.st_ino


def test_a_full_device_says_the_disk_is_full(pack_dir, tmp_path) -> None:
    r = tts(pack_dir, "Disk full.", "-o", "/dev/full")
    assert r.returncode == 1
    assert "cannot write /dev/full: the disk is full" in one_line_error(r)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def _read_fifo(path: Path, into: list[bytes]) -> threading.Thread:
    def reader() -> None:
        with open(path, "rb") as f:
            into.append(f.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    return thread


def test_a_fifo_gets_the_whole_file_and_stays_a_fifo(pack_dir, tmp_path) -> None:
    fifo, metrics = tmp_path / "audio.pipe", tmp_path / "metrics.pipe"
    os.mkfifo(fifo)
    os.mkfifo(metrics)
    audio: list[bytes] = []
    report: list[bytes] = []
    threads = [_read_fifo(fifo, audio), _read_fifo(metrics, report)]
    r = tts(pack_dir, "Into a pipe.", "-o", str(fifo), "--metrics", str(metrics))
    for thread in threads:
        thread.join(30)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and stat.S_ISFIFO(os.stat(metrics).st_mode)
    samples, rate = sf.read(__import__("io").BytesIO(audio[0]))
    assert rate == 24_000 and samples.size > 0
    assert json.loads(report[0])["backend"] == "pockettts"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audio.pipe", "metrics.pipe"]


def test_a_socket_path_is_refused(pack_dir, tmp_path) -> None:
    path = tmp_path / "s.wav"  # a socket by a name -o accepts: refused for what it is
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        r = tts(pack_dir, "No.", "-o", str(path))
    assert r.returncode == 1
    assert f"cannot write {path}: it is a socket" in one_line_error(r)


def test_an_existing_file_keeps_its_mode_and_a_link_stays_a_link(pack_dir, tmp_path) -> None:
    target = tmp_path / "private.wav"
    target.write_bytes(b"old")
    target.chmod(0o600)
    link = tmp_path / "link.wav"
    link.symlink_to(target.name)
    r = tts(pack_dir, "Kept private.", "-o", str(link))
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == target.name
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sf.info(target).samplerate == 24_000


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file another owner")
def test_an_existing_file_keeps_its_owner(pack_dir, tmp_path) -> None:
    target = tmp_path / "theirs.wav"
    target.write_bytes(b"old")
    os.chown(target, 12345, 23456)
    assert tts(pack_dir, "Still theirs.", "-o", str(target)).returncode == 0
    assert (target.stat().st_uid, target.stat().st_gid) == (12345, 23456)


def test_every_writer_helper_refuses_a_directory_and_keeps_nothing(tmp_path) -> None:
    with pytest.raises(UserError, match="it is a directory"), atomic_path(tmp_path) as tmp:
        tmp.write_text("x")
    assert list(tmp_path.iterdir()) == []


def test_enospc_at_the_os_boundary_says_the_disk_is_full(tmp_path, monkeypatch) -> None:
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(UserError) as info, atomic_path(tmp_path / "x.json") as tmp:
        tmp.write_text("{}")
    assert str(info.value) == f"cannot write {tmp_path / 'x.json'}: the disk is full"
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def tiny_tmpfs(tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@pytest.mark.parametrize("name", ["out.wav", "out.flac"])
def test_a_really_full_disk_is_one_line_and_leaves_nothing(pack_dir, tiny_tmpfs, name) -> None:
    out = tiny_tmpfs / name
    r = tts(
        pack_dir, "A text long enough to fill sixty four kilobytes of disk. " * 20, "-o", str(out)
    )
    assert r.returncode == 1
    assert f"cannot write {out}: the disk is full" in one_line_error(r)
    assert list(tiny_tmpfs.iterdir()) == []


# --- formats -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a.wav", "a.flac", "a.ogg", "a.opus", "a.mp3"])
def test_format_follows_the_file_name(pack_dir, tmp_path, name) -> None:
    out = tmp_path / name
    r = tts(pack_dir, "Formats.", "-o", str(out), "--seed", "1")
    assert r.returncode == 0, r.stderr
    info = sf.info(out)
    assert info.samplerate == 24_000 and info.channels == 1 and info.frames > 1920
    expected = {"wav": "WAV", "flac": "FLAC", "ogg": "OGG", "opus": "OGG", "mp3": "MP3"}
    assert info.format == expected[out.suffix[1:]]


def test_raw_pcm_on_stdout_equals_the_wav_samples(pack_dir, tmp_path) -> None:
    common = ("Raw samples.", "--seed", "3", "--no-deess")
    wav = tmp_path / "a.wav"
    assert tts(pack_dir, *common, "-o", str(wav)).returncode == 0
    pcm = tts(pack_dir, *common, "-o", "-", "--format", "s16le")
    f32 = tts(pack_dir, *common, "-o", "-", "--format", "f32le")
    assert pcm.returncode == 0 and f32.returncode == 0
    samples, _ = sf.read(wav, dtype="int16")  # the file is peak-normalised (FluidAudio's)
    floats = np.frombuffer(f32.stdout, "<f4")  # a stream cannot be: raw model audio
    ints = np.frombuffer(pcm.stdout, "<i2")
    assert floats.size == ints.size == samples.size
    assert np.abs(floats * 32767 - ints).max() <= 1.0
    assert np.abs(floats / np.abs(floats).max() * 32767 - samples).max() <= 1.0


@pytest.mark.parametrize("fmt", ["flac", "ogg", "opus", "mp3", "wav"])
def test_compressed_formats_stream_to_a_pipe(pack_dir, fmt) -> None:
    r = tts(pack_dir, "Piped.", "-o", "-", "--format", fmt)
    assert r.returncode == 0, r.stderr
    with sf.SoundFile(__import__("io").BytesIO(r.stdout)) as f:
        assert f.samplerate == 24_000 and sum(len(b) for b in f.blocks(4096)) > 1920


def test_unknown_format_is_a_usage_error(pack_dir) -> None:
    r = tts(pack_dir, "x", "-o", "-", "--format", "aiff")
    assert r.returncode == 2 and b"wav, flac, ogg, opus, mp3, s16le, f32le" in r.stderr


def test_format_for_names() -> None:
    assert format_for("x.FLAC").name == "flac" and format_for("noext").name == "wav"
    assert format_for("-", "PCM").name == "s16le" and format_for("x.wav", "mp3").name == "mp3"
    assert set(FORMATS) == {"wav", "flac", "ogg", "opus", "mp3", "s16le", "f32le"}


def test_encode_stream_is_a_library_api() -> None:
    blocks = [np.full(1920, 0.25, np.float32)] * 5
    data = b"".join(encode_stream(blocks, "s16le", 24_000))
    assert np.array_equal(np.frombuffer(data, "<i2"), np.full(9600, round(0.25 * 32767)))
    with pytest.raises(ModelOutputError):
        list(encode_stream([np.array([0.0, np.nan], np.float32)], "wav", 24_000))


def test_a_terminal_gets_no_binary_unless_forced(pack_dir) -> None:
    import pty

    parent, child = pty.openpty()

    def drain() -> None:  # a terminal nobody reads would block the writer
        try:
            while os.read(parent, 1 << 16):
                pass
        except OSError:
            pass

    threading.Thread(target=drain, daemon=True).start()
    try:
        for extra, code in (((), 2), (("--force",), 0)):
            r = run("tts", "Hi.", "-o", "-", "--model-dir", pack_dir, "-q", *extra, stdout=child)
            assert r.returncode == code, r.stderr
        assert (
            b"terminal"
            in run("tts", "Hi.", "-o", "-", "--model-dir", pack_dir, stdout=child).stderr
        )
    finally:
        os.close(child)


# --- the streamed writer -----------------------------------------------------------------


def test_streamed_writer_failure_keeps_nothing(tmp_path) -> None:
    out = tmp_path / "x.wav"
    with pytest.raises(RuntimeError), open_audio_writer(out, None, 24_000) as writer:
        writer.write(np.full(1920, 0.1, np.float32))
        raise RuntimeError("the model failed")
    assert list(tmp_path.iterdir()) == []


def test_streamed_writer_normalises_in_a_second_pass(tmp_path) -> None:
    from pocketcli.audio.postprocess import apply_output_chain

    rng = np.random.default_rng(0)
    audio = (rng.standard_normal(24_000 * 3) * 0.05).astype(np.float32)
    out = tmp_path / "x.wav"
    with open_audio_writer(out, None, 24_000, filters=True) as writer:
        for start in range(0, audio.size, 1920):
            writer.write(audio[start : start + 1920])
    written, _ = sf.read(out, dtype="float32")
    whole = apply_output_chain(audio, 24_000)
    assert np.abs(written - whole).max() < 1.5 / 32767


def test_silent_speech_is_an_error_but_pauses_are_not(tmp_path) -> None:
    silent = open_audio_writer(tmp_path / "s.wav", None, 24_000)
    with pytest.raises(ModelOutputError, match="only silence"), silent as writer:
        writer.write(np.zeros(1920, np.float32))
    with open_audio_writer(tmp_path / "p.wav", None, 24_000) as writer:
        writer.write(np.zeros(1920, np.float32), speech=False)
    assert [p.name for p in tmp_path.iterdir()] == ["p.wav"]


# --- numbers that cannot make audio ---------------------------------------------


@pytest.mark.parametrize("value", ["inf", "1e308", "nan", "11"])
def test_impossible_temperature_is_a_usage_error(pack_dir, tmp_path, value) -> None:
    r = tts(pack_dir, "Hot.", "-o", str(tmp_path / "x.wav"), "--temperature", value)
    assert r.returncode == 2 and b"temperature" in r.stderr
    assert not (tmp_path / "x.wav").exists()


def test_a_voice_that_overflows_is_one_line_and_no_file(pack_dir, voice_path, tmp_path) -> None:
    from safetensors.numpy import load_file, save_file

    state = load_file(str(voice_path))
    huge = {k: np.full_like(v, 3e38) if v.dtype == np.float32 else v for k, v in state.items()}
    save_file(huge, str(tmp_path / "huge.safetensors"))
    out = tmp_path / "x.wav"
    r = tts(pack_dir, "Loud.", "-o", str(out), "--voice-file", str(tmp_path / "huge.safetensors"))
    assert r.returncode == 1 and "NaN or infinite" in one_line_error(r)
    assert not out.exists()


def _copy_pack(pack_dir: Path, to: Path, checksums: bool) -> Path:
    import shutil

    from pocketcli.packs.manifest import PackManifest

    shutil.copytree(pack_dir, to)
    if checksums:
        PackManifest.read(to).write(to)
    else:  # a pack built before packs carried sha256 sums
        manifest = json.loads((to / "pack.json").read_text(encoding="utf-8"))
        manifest.pop("files", None)
        (to / "pack.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return to


def test_a_damaged_pack_file_is_found_by_its_sha256(pack_dir, tmp_path) -> None:
    pack = _copy_pack(pack_dir, tmp_path / "pack", checksums=True)
    first = tts(pack, "Fine.", "-o", str(tmp_path / "ok.wav"))
    assert first.returncode == 0 and (pack / ".pockettts-verified.json").is_file()
    data = pack / "flowlm_step.onnx.data"
    data.write_bytes(np.random.default_rng(1).bytes(data.stat().st_size))
    r = tts(pack, "Broken.", "-o", str(tmp_path / "x.wav"))
    assert r.returncode == 1
    assert "flowlm_step.onnx.data does not match the sha256" in one_line_error(r)
    assert not (tmp_path / "x.wav").exists()


def test_an_old_pack_without_checksums_still_loads_and_bad_audio_is_caught(
    pack_dir, tmp_path
) -> None:
    pack = _copy_pack(pack_dir, tmp_path / "pack", checksums=False)
    assert "files" not in json.loads((pack / "pack.json").read_text()) or not json.loads(
        (pack / "pack.json").read_text()
    ).get("files")
    # Both fp32 decoders: frames go through the batched one when the pack has it.
    for name in ("mimi_decoder.onnx.data", "mimi_decoder_batch.onnx.data"):
        data = pack / name
        data.write_bytes(np.random.default_rng(2).bytes(data.stat().st_size))
    r = tts(pack, "Broken decoder.", "-o", str(tmp_path / "x.wav"))
    assert r.returncode == 1 and "the model" in one_line_error(r)
    assert not (tmp_path / "x.wav").exists()


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: {**d, "graphs": {"fp32": {**d["graphs"]["fp32"], "flow_head": 7}}}, "string"),
        (lambda d: {**d, "source": json.loads("[" * 5000 + "]" * 5000)}, "nested too deeply"),
        (lambda d: {k: v for k, v in d.items() if k != "constants"}, "no 'constants' entry"),
    ],
)
def test_malformed_pack_json_is_one_plain_line(pack_dir, tmp_path, change, message) -> None:
    pack = _copy_pack(pack_dir, tmp_path / "pack", checksums=False)
    manifest = pack / "pack.json"
    try:
        changed = change(json.loads(manifest.read_text()))
        manifest.write_text(json.dumps(changed))
    except RecursionError:
        manifest.write_text('{"format": "pockettts-onnx-pack", "x": ' + "[" * 100_000)
    r = tts(pack, "x", "-o", str(tmp_path / "x.wav"))
    assert r.returncode == 1, r.stderr
    text = one_line_error(r)
    assert message in text or "nested too deeply" in text or "cannot read" in text
    assert "Error:" not in text.split("error:", 1)[-1][:12]


# --- arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed, code", [("-1", 2), (str(2**64), 2), (str(2**64 - 1), 0), ("0", 0)])
def test_seed_range(pack_dir, tmp_path, seed, code) -> None:
    r = tts(pack_dir, "Seeded.", "-o", str(tmp_path / "x.wav"), "--seed", seed)
    assert r.returncode == code, r.stderr
    if code == 2:
        assert b"seed must be a whole number from 0 to 2^64-1" in r.stderr


def test_non_utf8_argument_is_refused_like_stdin(pack_dir, tmp_path) -> None:
    out = tmp_path / "x.wav"
    r = subprocess.run(
        [SCRIPT.encode(), b"tts", b"caf\xe9", b"-o", bytes(out), b"--model-dir", bytes(pack_dir)],
        capture_output=True,
        timeout=120,
    )
    assert r.returncode == 2 and b"not UTF-8" in r.stderr and not out.exists()


def test_broken_pipe_exits_quietly(pack_dir) -> None:
    proc = subprocess.Popen(
        [SCRIPT, "tts", "A long text. " * 200, "-o", "-", "--model-dir", str(pack_dir), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(100)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(60) == 141 and err == b""


def test_a_voice_offset_of_shape_zero_is_one_plain_line(pack_dir, voice_path, tmp_path) -> None:
    from safetensors.numpy import load_file, save_file

    state = load_file(str(voice_path))
    bad = {k: np.zeros(0, np.int64) if k.endswith("/offset") else v for k, v in state.items()}
    save_file(bad, str(tmp_path / "bad.safetensors"))
    r = tts(
        pack_dir,
        "x",
        "-o",
        str(tmp_path / "x.wav"),
        "--voice-file",
        str(tmp_path / "bad.safetensors"),
    )
    assert r.returncode == 1
    assert "offset must be one integer" in one_line_error(r)


def test_dev_stdout_on_a_pipe_is_written_into(pack_dir) -> None:
    r = tts(pack_dir, "Through the pipe.", "-o", "/dev/stdout")
    assert r.returncode == 0, r.stderr
    with sf.SoundFile(__import__("io").BytesIO(r.stdout)) as f:
        assert f.samplerate == 24_000 and f.frames > 1920
