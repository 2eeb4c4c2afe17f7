"""Batch files: one utterance per line, made by one process, N processes or a Ray cluster.

- ``parse``: lines to items (ids, stable names, unsafe names refused)
- ``plan``: items to jobs (the per-line seed, the key of text + settings)
- ``manifest``: the JSON Lines record next to the outputs ("done" means recorded there)
- ``worker``: a loaded model that makes one line into a WAV file, streamed
- ``runner``: the driver (skips finished lines, writes files and the manifest, summary);
  ``pocketcli.cli.batch_command`` turns the command line into a run
- ``processes`` / ``ray_runner``: the same lines on N local processes or Ray actors
- ``progress``: lines done, audio hours, aggregate RTFx and ETA while it runs
"""

from pocketcli.batch.parse import BatchItem, parse_batch

__all__ = ["BatchItem", "parse_batch"]
