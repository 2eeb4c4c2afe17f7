"""The kit every front end shares, below all of them: HTTP (``serve``), its websocket,
Wyoming (``wyoming``) and MCP (``mcp``) import from here, never from each other.

- ``backend``: the one place a server talks to the library (load, voices, frames).
- ``voices``: the voices a client may name (``VoiceBook``).
- ``turns``: text arriving in pieces, spoken sentence by sentence (``SpokenTurn``).
- ``admission``: up to ``max_streams`` generations at once behind a bounded queue.
- ``encoding``: audio frames as the bytes of a format, as they are made.
- ``logs``: structured logs, one JSON object per line.

Nothing here needs a server's optional dependencies (FastAPI, uvicorn, wyoming, mcp).
"""
