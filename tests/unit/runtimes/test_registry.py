"""Runtimes plug in at one place: the registry.

A fake runtime, installed as a separate distribution with an entry point in
the ``pockettts.runtimes`` group (what ``pip install some-backend`` would
leave on disk), speaks through the real ``pockettts`` command, with no file
of pockettts changed. It wraps the ONNX runtime on the committed tiny pack and
counts its calls, so the test can tell that the fake, not ONNX, spoke.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest
import soundfile as sf

from pocketcli.errors import UnknownNameError
from pocketcli.runtimes import registry
from tests.support.cli import run
from tests.support.paths import PACKAGE

FAKE_SPEC = '''
"""A third-party runtime for pockettts: ONNX underneath, every call counted."""

import json
import os
from pathlib import Path

from pocketcli.runtimes.registry import LoadedModel, RuntimeSpec


class Counting:
    def __init__(self, inner, log):
        self._inner, self._log, self.calls = inner, log, {}
        self.config = inner.config

    def __getattr__(self, name):
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def counted(*args, **kwargs):
            self.calls[name] = self.calls.get(name, 0) + 1
            self._log.write_text(json.dumps(self.calls))
            return attr(*args, **kwargs)

        return counted


class FakeSpec(RuntimeSpec):
    name = "fake"
    description = "a test double"
    precisions = ("fp32", "int8")
    default_precision = "fp32"
    placements = ("here", "there")
    default_placement = "here"

    def languages(self):
        return ("english",)

    def find_pack(self, req):
        return Path(os.environ["FAKE_RUNTIME_PACK"])

    def load(self, pack_dir, req):
        from pocketcli.runtimes.onnx import OnnxRuntime

        inner = OnnxRuntime(pack_dir, precision=req.precision)
        log = Path(os.environ["FAKE_RUNTIME_LOG"])
        runtime = Counting(inner, log)
        return LoadedModel(
            runtime, inner.tokenizer_path, inner.manifest.tokenizer_kind, "english", pack_dir
        )

    def voice_file(self, model, req, name):
        return Path(os.environ["FAKE_RUNTIME_VOICE"])


SPEC = FakeSpec()
'''


@pytest.fixture
def plugin(tmp_path, pack_dir, voice_path) -> dict[str, str]:
    """A site folder holding the fake package and its dist-info, and the env to use it."""
    site = tmp_path / "site"
    (site / "fake_backend").mkdir(parents=True)
    (site / "fake_backend" / "__init__.py").write_text(FAKE_SPEC, encoding="utf-8")
    info = site / "fake_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fake-backend\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[pockettts.runtimes]\nfake = fake_backend:SPEC\n", encoding="utf-8"
    )
    path = [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]
    return dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(path),
        FAKE_RUNTIME_PACK=str(pack_dir),
        FAKE_RUNTIME_VOICE=str(voice_path),
        FAKE_RUNTIME_LOG=str(tmp_path / "calls.json"),
    )


def test_a_plugin_runtime_speaks_through_the_cli(plugin, tmp_path) -> None:
    out = tmp_path / "fake.wav"
    r = run("tts", "Spoken by a plug-in.", "--runtime", "FAKE", "--precision", "int8",
            "--placement", "there", "-v", "alba", "--seed", "1", "-o", str(out), "-q",
            env=plugin)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert sf.info(out).frames > 0
    calls = json.loads(Path(plugin["FAKE_RUNTIME_LOG"]).read_text(encoding="utf-8"))
    assert calls["step"] > 0 and calls["decode"] > 0


def test_a_plugin_runtimes_values_are_validated_listed_and_completed(plugin) -> None:
    r = run("tts", "Hi.", "--runtime", "fake", "--placement", "nowhere", env=plugin)
    assert r.returncode == 2 and b"here, there" in r.stderr
    env = dict(plugin, _POCKETTTS_COMPLETE="complete_bash", COMP_CWORD="3")
    for words, expected in (
        ("pockettts tts --runtime ", "fake"),
        ("pockettts tts --placement ", "there"),
    ):
        done = run(env=dict(env, COMP_WORDS=words))
        assert expected in done.stdout.decode().split()


def test_auto_never_picks_a_runtime_that_cannot_run_here() -> None:
    spec = registry.choose("auto")
    assert spec.unavailable_reason() is None
    assert registry.get("onnx").unavailable_reason() is None


def test_unknown_runtime_lists_the_registered_ones() -> None:
    with pytest.raises(UnknownNameError) as info:
        registry.get("tpu")
    assert set(info.value.valid) >= {"auto", "onnx", "coreml"}


def _compared_strings(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            for part in parts:
                items = part.elts if isinstance(part, ast.Tuple | ast.List | ast.Set) else [part]
                found += [
                    (node.lineno, item.value)
                    for item in items
                    if isinstance(item, ast.Constant) and isinstance(item.value, str)
                ]
        elif isinstance(node, ast.MatchValue) and isinstance(node.value, ast.Constant):
            found.append((node.lineno, node.value.value))
    return found


def test_no_code_outside_runtimes_and_store_branches_on_a_runtime_name() -> None:
    names = set(registry.builtin_names())
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        top = path.relative_to(PACKAGE).parts[0]
        if top in ("runtimes", "store"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        offenders += [
            f"{path.relative_to(PACKAGE)}:{line}: {value!r}"
            for line, value in _compared_strings(tree)
            if value in names
        ]
    assert offenders == [], "ask the runtime's RuntimeSpec instead:\n" + "\n".join(offenders)


def test_coreml_tables_agree_between_the_runtime_and_the_catalogue() -> None:
    """The runtime's unit table (what it loads) and catalog.json (what the store fetches)
    name the same precisions, placements, defaults and models."""
    from pocketcli.runtimes.coreml import units
    from pocketcli.store.catalog import catalog

    spec, cat = registry.get("coreml"), catalog().coreml
    assert spec.precisions == units.PRECISIONS == tuple(cat.flowlm)
    assert spec.placements == units.PLACEMENTS == tuple(cat.placements)
    assert spec.default_precision == cat.default_precision
    assert spec.default_placement == cat.default_placement
    for placement in units.PLACEMENTS:
        for precision in units.PRECISIONS:
            loaded = {f"{m}.mlmodelc" for m in units.stage_models(placement, precision).values()}
            assert loaded == set(cat.models(precision, placement)), (placement, precision)
