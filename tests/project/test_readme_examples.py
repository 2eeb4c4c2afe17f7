"""README.md's Python examples run as written, and its links lead somewhere.

Every Python example runs in its own interpreter.

Like pocket-tts's test_documentation_examples.py: each ```python block is extracted and
run in a subprocess from a scratch folder that sees the repository's ``tests/`` (so the
examples' relative paths to the committed tiny pack resolve and the files they write
land in the scratch folder), with the Hugging Face Hub forbidden (``HF_HUB_OFFLINE``)
and empty caches. Examples that talk to ``pockettts serve`` at 127.0.0.1:8000 get a
real server on the tiny pack instead, on a free port: the only change made to their
text. That server is set up as README's own tiny-pack set-up says (its ``cp`` line names
the voice file, ``alba.safetensors``, and its ``serve`` line the ``--voice-dir``): an
example speaking with a voice that set-up does not give fails here, as it would for a
reader who follows README (the tiny pack has no built-in voices).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import soundfile as sf

from tests.support.cli import cli_env, run
from tests.support.paths import PACKAGE, ROOT

README = ROOT / "README.md"
SERVER = "127.0.0.1:8000"
TIMEOUT = 600  # seconds; the slowest example builds a tiny pack at three precisions


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, code) of each ```python block."""
    blocks = []
    lines = text.split("\n")
    start = None
    for number, line in enumerate(lines, 1):
        if start is None and line.strip() == "```python":
            start = number
        elif start is not None and line.strip() == "```":
            blocks.append((start + 1, "\n".join(lines[start : number - 1]) + "\n"))
            start = None
    assert start is None, f"README.md:{start}: a ```python block is never closed"
    return blocks


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


def test_readme_has_python_examples() -> None:
    # Guards the extraction itself: a renamed fence would silently run nothing.
    assert len(BLOCKS) >= 5
    assert all(code.strip() for _, code in BLOCKS)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from pocketcli.serve.limits import ServeSettings
    from tests.support.servehelp import VOICE, serving

    text = README.read_text(encoding="utf-8")
    copy = re.search(r"^mkdir -p (\S+) && cp tests/fixtures/tiny/voice\.safetensors \1/(\S+)$",
                     text, re.MULTILINE)  # fmt: skip
    assert copy is not None, "README lost its tiny-pack server set-up"
    assert f"serve --model-dir tests/fixtures/tiny/pack --voice-dir {copy[1]}" in text
    voices = tmp_path_factory.mktemp("voices")
    shutil.copyfile(VOICE, voices / copy[2])
    with serving(settings=ServeSettings(voice_dir=voices)) as (url, _records):
        yield url.removeprefix("http://")


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"README.md:{n}" for n, _ in BLOCKS])
def test_readme_example_runs(line: int, code: str, tmp_path: Path, request) -> None:
    if SERVER in code:
        code = code.replace(SERVER, request.getfixturevalue("server"))
    work = tmp_path / "work"
    work.mkdir()
    (work / "tests").symlink_to(ROOT / "tests", target_is_directory=True)
    script = work / "example.py"
    script.write_text(code, encoding="utf-8")
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        HF_HOME=str(tmp_path / "hf"),
        POCKETTTS_CACHE=str(tmp_path / "cache"),
        NO_PROXY="127.0.0.1",
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, (
        f"the example at README.md:{line} failed (exit {done.returncode}):\n"
        f"{code}\n--- stderr ---\n{done.stderr[-3000:]}"
    )
    assert not re.search(r"^Traceback", done.stderr, re.M), done.stderr[-3000:]


DOCS = [README, ROOT / "benchmarks" / "README.md"]
FENCED = re.compile(r"^```.*?^```", re.M | re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(markdown: str) -> set[str]:
    """The heading anchors GitHub makes: lower case, punctuation dropped, spaces to
    hyphens, a repeated heading numbered."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+)$", FENCED.sub("", markdown), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_and_anchors_resolve(doc: Path) -> None:
    text = FENCED.sub("", doc.read_text(encoding="utf-8"))
    links = [m for m in LINK.findall(text) if not re.match(r"[a-z]+://|mailto:", m)]
    assert links, f"{doc.name}: no local links found (the pattern is wrong)"
    broken = []
    for link in links:
        path, _, fragment = link.partition("#")
        target = (doc.parent / path) if path else doc
        if not target.exists():
            broken.append(f"{link}: no file {target.relative_to(ROOT)}")
        elif fragment and fragment not in anchors(target.read_text(encoding="utf-8")):
            broken.append(f"{link}: no heading #{fragment} in {target.name}")
    assert not broken, f"{doc.relative_to(ROOT)}: " + "; ".join(broken)


TOP = {"tests", "scripts", "benchmarks", "pocketcli", "completions", ".ci"}
# A repository path in backticks: a folder (ends in /) or a file with an extension.
PATH = re.compile(r"`([A-Za-z_.][\w.*-]*/(?:[\w.*-]+/)*(?:[\w*-]+\.[\w]+)?)`")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_named_files_exist(doc: Path) -> None:
    # After files move (tests into folders, modules split), the docs must follow.
    subpackages = {p.name for p in PACKAGE.iterdir() if p.is_dir()}
    named = set(PATH.findall(doc.read_text(encoding="utf-8")))
    checked, missing = 0, []
    for path in sorted(named):
        top = path.split("/")[0]
        base = ROOT if top in TOP else PACKAGE if top in subpackages else None
        if base is None:
            continue  # a path inside a model folder or a repository elsewhere
        checked += 1
        if not list(base.glob(path.rstrip("/"))):
            missing.append(path)
    assert checked, "no repository paths found (the pattern is wrong)"
    assert not missing, f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


def setup_commands() -> list[str]:
    """The one-line commands of README's "Set up" section, in order."""
    section = README.read_text(encoding="utf-8").split("\n## Set up\n", 1)[1].split("\n## ")[0]
    return [block.strip() for block in re.findall(r"^```sh\n(.*?)^```", section, re.M | re.S)]


def test_setup_command_speaks(tmp_path: Path) -> None:
    # The fresh-machine command, minus making the venv this suite already runs in.
    steps = setup_commands()[0].split(" && ")
    assert steps[:3] == ["python3 -m venv .venv", ". .venv/bin/activate", "pip install -e ."]
    argv = shlex.split(steps[-1])
    assert argv[:2] == ["pockettts", "tts"] and len(steps) == 4, steps
    (tmp_path / "tests").symlink_to(ROOT / "tests", target_is_directory=True)
    done = run(*argv[1:], cwd=tmp_path, env=cli_env(HF_HOME=str(tmp_path / "hf")), text=True)
    assert done.returncode == 0, done.stderr
    info = sf.info(tmp_path / argv[argv.index("-o") + 1])
    assert info.samplerate == 24_000 and info.channels == 1 and info.frames > 0


def test_ci_runs_the_readme_test_command() -> None:
    # README promises that .ci/run runs the same test command on a fresh clone.
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    pieces = {
        piece.strip()
        for line in ci.splitlines()
        if not line.lstrip().startswith("#")
        for piece in line.split(" && ")
    }
    steps = setup_commands()[1].split(" && ")
    assert steps[-1].startswith("python -m pytest"), steps
    for step in steps:
        assert step in pieces, f".ci/run does not run `{step}` as README writes it"
