"""KevinAHM's "v2" ONNX bundle layout (``KevinAHM/pocket-tts-onnx``, ``onnx/<bundle>/``).

``metadata``: ``bundle.json`` and its state manifests; ``graphs``: the five graphs
with that layout's names, shapes and states, built from our own graph code;
``export``: writing a bundle from a checkpoint.
"""
