"""``pockettts serve``: the model behind HTTP, as OpenAI's and pocket-tts's clients call it.

- ``app.create_app`` builds the ASGI app (FastAPI): OpenAI's ``/v1/audio/speech``
  and ``/v1/models``, pocket-tts's ``/tts`` form, cloned voices (``/v1/voices``),
  health, metrics and the web page at ``/``.
- ``limits``, ``metrics``, ``settings`` do what they say; what every front end
  shares (the backend, voices, admission, encoding, logs) is ``pocketcli.frontends``.
- ``server.run`` binds the socket and runs uvicorn with a graceful shutdown;
  ``rayserve.run`` runs the same app on Ray Serve replicas (``serve --ray``).

FastAPI, uvicorn, python-multipart and prometheus-client come with the
optional ``serve`` extra; ``require_extra`` says what to install without it.
"""

from __future__ import annotations

from pocketcli.extras import require

EXTRA = "pip install 'pockettts[serve]'"
_MODULES = ("fastapi", "uvicorn", "python_multipart", "prometheus_client")


def require_extra() -> None:
    """One line naming the extra when a server dependency is missing."""
    require("the server", "serve", _MODULES)
