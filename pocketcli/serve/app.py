"""The ASGI app, assembled: routers by area, error handlers, middleware, lifespan.

``create_app(load, settings)`` returns a FastAPI app whose lifespan loads the
model on a thread (``/readyz`` answers 503 until it is loaded) and, at
shutdown, cancels whatever the model still has to do. The routes live in
``serve.routes`` (one ``APIRouter`` per area, listed in ``ROUTERS``).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

import anyio
from fastapi import APIRouter, FastAPI

from pocketcli.frontends.backend import Backend
from pocketcli.serve import apierrors
from pocketcli.serve.limits import ApiKey, BodyLimit
from pocketcli.serve.metrics import CountRequests
from pocketcli.serve.routes import form, health, speech, voices, ws
from pocketcli.serve.settings import ServeSettings
from pocketcli.serve.state import ServerState
from pocketcli.serve.streaming import NOTICE_HEADER

# Each area of the API; a new front end adds its router here.
ROUTERS: tuple[APIRouter, ...] = (
    health.router,
    speech.router,
    form.router,
    voices.router,
    ws.router,
)


def create_app(
    load: Callable[[], Backend],
    settings: ServeSettings | None = None,
    routers: Sequence[APIRouter] = ROUTERS,
) -> FastAPI:
    settings = settings or ServeSettings()
    state = ServerState(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        threading.Thread(
            target=state.load, args=(load,), name="pockettts-load", daemon=True
        ).start()
        yield
        if state.scheduler is not None:
            await anyio.to_thread.run_sync(state.scheduler.close, settings.shutdown_seconds)

    app = FastAPI(title="pockettts", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.pockettts = state
    for router in routers:
        app.include_router(router, responses=apierrors.RESPONSES)
    apierrors.install(app)
    _document_as_answered(app, settings.limits.max_chars)
    return _with_middleware(app, state)


def _document_as_answered(app: FastAPI, max_chars: int) -> None:
    """The OpenAPI document with this server's errors (400, not FastAPI's 422) and
    its text limit."""
    build = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is None:
            document = apierrors.without_422(build())
            for name, field in (("SpeechRequest", "input"), ("Body_tts_form_tts_post", "text")):
                schema = document["components"]["schemas"].get(name, {})
                schema.get("properties", {}).get(field, {})["maxLength"] = max_chars
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _with_middleware(app: FastAPI, state: ServerState) -> FastAPI:
    settings = state.settings
    # Added last = outermost: the key is checked before the body is read.
    app.add_middleware(BodyLimit, limits=settings.limits)
    if settings.api_key:
        app.add_middleware(ApiKey, key=settings.api_key)
    if settings.cors_origins:  # a browser's preflight carries no key
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["*"],
            expose_headers=["X-Request-Id", "X-PocketTTS-Voice", NOTICE_HEADER],
        )
    app.add_middleware(CountRequests, metrics=state.metrics)  # outermost: sees every answer
    return app
