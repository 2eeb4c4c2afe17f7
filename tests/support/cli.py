"""Running the real ``pockettts`` console script, one way for every test.

``run(...)`` starts it as a subprocess, waits with a generous deadline (a loaded machine
is slow, not stuck) and returns the completed process; its stdout and stderr are bytes
unless ``text=True``. The environment is ``cli_env()`` unless a test passes its own
(a stand-in Hub's, say): this process's, without ``POCKETTTS_DEBUG`` (so errors are the
one line a user sees, not a traceback) and with the Hugging Face Hub offline, so a test
that would download something fails at once instead of waiting on the network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

SCRIPT = shutil.which("pockettts") or str(Path(sys.executable).with_name("pockettts"))
TIMEOUT = 300.0  # seconds: generous; a CLI run on the tiny pack takes a few


def cli_env(**extra: str) -> dict[str, str]:
    """The environment a CLI run gets: this one, debug output off, the Hub offline, plus
    ``extra``."""
    env = {k: v for k, v in os.environ.items() if k != "POCKETTTS_DEBUG"}
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env | extra


def run(
    *args: str | Path,
    stdin: bytes | str | IO[Any] | int | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    cache: Path | None = None,
    shell: str = "",
    text: bool = False,
    timeout: float = TIMEOUT,
    **popen: Any,
) -> subprocess.CompletedProcess:
    """``pockettts *args``: ``stdin`` is what it reads (bytes or text fed to it, or a file
    or descriptor it is given); ``shell`` a redirection or process substitution bash
    applies (``>&-``, ``< <(yes)``); ``env`` its whole environment (default ``cli_env()``);
    ``popen`` more ``subprocess.run`` arguments (``stdout=``, ``preexec_fn=``...)."""
    argv = [SCRIPT, *map(str, args)]
    if shell:
        argv = ["bash", "-c", f'exec "$0" "$@" {shell}', *argv]
    feed = {"input": stdin} if isinstance(stdin, bytes | str) else {"stdin": stdin}
    environ = cli_env() if env is None else dict(env)
    if cache is not None:
        environ["POCKETTTS_CACHE"] = str(cache)
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    return subprocess.run(
        argv,
        cwd=cwd,
        env=environ,
        text=text,
        timeout=timeout,
        **feed,
        **popen,
    )
