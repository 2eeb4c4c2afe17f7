"""Every default a front end uses, in one place: change one here, and every front end follows.

The library's types take their defaults from here (``ModelRequest``,
``SpeakOptions``, the model config, the server's ``Limits``, Wyoming's and
MCP's settings), and the front ends read them from those types or from here
(the CLI's flags and their help, ``serve``, ``wyoming``, ``mcp``, batch runs,
the benchmark): no front end writes a default of its own.
``tests/cli/test_defaults_are_the_librarys.py`` checks the CLI's declared defaults against these.

``None`` in a request still means "the model's own" (a config's temperature,
a pack's voice): the values below are what holds when nothing else says.
This module imports nothing, so ``--help`` reads it for free.
"""

from __future__ import annotations

# The model
LANGUAGE = "english"  # the model spoken when no language, pack or config is named
RUNTIME = "auto"  # the best runtime that runs here
SAMPLE_RATE = 24_000  # Hz, Mimi's
TEMPERATURE = 0.3  # Kyutai's choice, when a config does not say
EOS_THRESHOLD = -4.0  # Kyutai's, when a config does not say
MAX_TOKENS = 50  # tokens per text chunk (Kyutai's and KevinAHM's)
WEB_ADDRESSES = "read"  # URLs and e-mail addresses in text: read them out ("drop": leave out)

# The servers (serve, wyoming, mcp)
MAX_CHARS = 4096  # text per request, turn or call (OpenAI's own limit)
# Streams one loaded model speaks at once, wherever a front end has a limit (serve's
# --max-streams and Limits, batch's --streams auto, synthesize_many's max_streams); more
# wait their turn. Provisional, from the parts' costs on 2 cores (4 full-size int8 streams
# need about 39 ms of each 80 ms frame; README, "Many streams at once"): the largest count
# whose slowest stream stays at real time in ``bench_engine.py --streams 1,2,4,8 --full
# --precision int8`` on a quiet machine is the figure to set.
MAX_STREAMS = 4
LOG_LEVEL = "info"
SERVE_HOST = "127.0.0.1"  # loopback unless told otherwise
SERVE_PORT = 8000
WYOMING_URI = "tcp://127.0.0.1:10200"  # Wyoming's usual TTS port
WYOMING_IDLE_SECONDS = 300.0  # a Wyoming client silent this long is dropped
MCP_MAX_QUEUE = 8  # texts waiting for the speakers
# serve --ray: one replica, and Ray Serve's own autoscaling delays
RAY_MIN_REPLICAS = 1
RAY_UPSCALE_DELAY_S = 30.0
RAY_DOWNSCALE_DELAY_S = 600.0

# The benchmark and exports
CORPUS = "minimax-english"
ASR_BACKEND = "auto"  # the first recogniser installed
EXPORT_PRECISION = "int8"  # a KevinAHM bundle: fp32 and int8 graphs
