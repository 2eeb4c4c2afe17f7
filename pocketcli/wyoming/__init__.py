"""``pockettts wyoming``: the model behind the Wyoming protocol (Home Assistant's voice).

- ``handler`` answers one client: ``describe`` -> ``info``; ``synthesize`` ->
  ``audio-start`` / ``audio-chunk``s / ``audio-stop``; streaming
  ``synthesize-start`` / ``synthesize-chunk``s / ``synthesize-stop`` -> audio
  as each sentence completes, then ``synthesize-stopped``; ``error`` events.
- ``server`` listens on ``tcp://``, ``unix://`` or ``stdio://`` and stops
  cleanly on SIGTERM.

The ``wyoming`` package comes with the optional ``wyoming`` extra.
"""

from __future__ import annotations

from pocketcli.extras import require


def require_extra() -> None:
    require("the Wyoming server", "wyoming", ("wyoming",))
