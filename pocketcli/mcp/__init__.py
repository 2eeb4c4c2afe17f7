"""``pockettts mcp``: the model as Model Context Protocol tools, on stdio.

- ``speaker`` plays queued texts on the sound device through the library's
  live sessions and sinks, one after another (``interrupt`` cuts in).
- ``server`` declares the tools with the ``mcp`` SDK: ``speak``,
  ``stop_speaking``, ``status``, ``list_voices`` and ``synthesize`` (the
  audio back to the caller as WAV, and optionally into the folder the user
  allowed with ``--output-dir``, never elsewhere).

The ``mcp`` package comes with the optional ``mcp`` extra.
"""

from __future__ import annotations

from pocketcli.extras import require


def require_extra() -> None:
    require("the MCP server", "mcp", ("mcp",))
