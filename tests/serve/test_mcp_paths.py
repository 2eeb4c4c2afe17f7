"""`pockettts mcp --output-dir DIR`: synthesize writes inside DIR however the path is
said (relative, absolute, through DIR's own name), and never outside it, even in a sibling
folder whose name starts as DIR's does (a string prefix is not a parent), nor DIR itself,
nor through a symlink out of it. Text of exactly --max-chars is spoken, one character more
refused. Through the reference SDK's stdio client."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402

from tests.serve.test_mcp import call, text_of  # noqa: E402
from tests.support.protohelp import TINY_ARGS  # noqa: E402


def test_synthesize_writes_inside_the_output_dir_and_nowhere_near_it(tmp_path) -> None:
    out, sibling = tmp_path / "out", tmp_path / "out2"
    out.mkdir()
    sibling.mkdir()
    (out / "escape").symlink_to(sibling)
    allowed = ["a.wav", "../out/b.wav", str(out / "c.wav"), "./d.wav"]
    refused = [
        "../out2/x.wav",  # the sibling, by a relative path
        str(sibling / "x.wav"),  # and by its absolute one
        str(out) + "2/x.wav",
        "escape/x.wav",  # a symlink out
        "../out",  # the folder itself
        ".",
        "../x.wav",
    ]

    async def steps(session: ClientSession):
        said = {}
        for path in allowed + refused:
            said[path] = await session.call_tool("synthesize", {"text": "Hi.", "path": path})
        return said

    said = call([*TINY_ARGS, "--output-dir", str(out)], steps)
    for path in allowed:
        assert not said[path].is_error, (path, text_of(said[path]))
    for path in refused:
        assert said[path].is_error, path
        assert "is not inside the folder" in text_of(said[path]), text_of(said[path])
    assert sorted(p.name for p in out.iterdir()) == ["a.wav", "b.wav", "c.wav", "d.wav", "escape"]
    assert list(sibling.iterdir()) == [] and not (tmp_path / "x.wav").exists()


def test_text_of_exactly_max_chars_is_synthesized(tmp_path) -> None:
    texts = {n: ("Hello there, you. " * 5)[:n] for n in (19, 20, 21)}

    async def steps(session: ClientSession):
        return {n: await session.call_tool("synthesize", {"text": t}) for n, t in texts.items()}

    said = call([*TINY_ARGS, "--max-chars", "20"], steps)
    assert not said[19].is_error and not said[20].is_error, text_of(said[20])
    assert said[21].is_error and "over the limit of 20" in text_of(said[21])
