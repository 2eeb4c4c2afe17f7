"""The app's routes, one ``APIRouter`` per area; ``serve.app.ROUTERS`` lists them.

A new front end is a module here with its own ``router``, added to
``ROUTERS``: its routes take ``Ready`` (``serve.state``) for the loaded model,
read fields with ``serve.fields``, and speak with ``serve.streaming``
(``speak`` for a streamed HTTP body, ``run_first``/``speech_job`` for any
other transport). Errors are ``ApiError`` (``serve.apierrors``), answered in
OpenAI's shape.
"""
