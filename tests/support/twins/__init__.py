"""FluidAudio's CoreML graphs as ONNX "twins", used only by tests.

``fluid_twins.build_twin_pack`` writes a ``v2.1/<lang>/``-shaped pack whose
models are ONNX graphs with the Core ML models' inputs and outputs, built
from a Kyutai checkpoint; ``onnx_predictor.onnx_factory`` runs them behind
the CoreML runtime's predictor interface, so the CoreML runtime is tested on
any OS. Moved out of the installed package (it was pocketcli/packs/fluid_twin*.py
and pocketcli/runtimes/coreml/onnx_predictor.py).
"""
