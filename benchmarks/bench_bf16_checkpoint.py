"""Memory and time to read a full-size BF16 checkpoint (Kyutai's released dtype) as float32.

Writes a BF16 safetensors file with the tensor shapes of the full-size English
model (6 FlowLM layers of d_model 1024, the 4001-row text table, the flow head
and a Mimi-sized remainder: about 109 M parameters, 207 MB, close to
``tts_b6369a24.safetensors``), then reads it with ``read_checkpoint`` in a
fresh child process and reports the child's peak RSS against its baseline
(interpreter + numpy + pocketcli imported) and against the float32 size of
the weights. The reader must cost about one float32 copy, not several.

    python benchmarks/bench_bf16_checkpoint.py [--keep FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, resource, sys, time
import numpy as np
from pocketcli.packs.checkpoint import read_checkpoint
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
w = read_checkpoint(sys.argv[1])
seconds = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"base_kb": base, "peak_kb": peak, "seconds": seconds,
                  "float32_bytes": sum(v.nbytes for v in w.values()), "tensors": len(w)}))
"""


def shapes() -> dict[str, tuple[int, ...]]:
    d, ffn, flow = 1024, 4096, 512
    out: dict[str, tuple[int, ...]] = {
        "flow_lm.conditioner.embed.weight": (4001, d),
        "flow_lm.input_linear.weight": (d, 32),
        "flow_lm.bos_before_voice": (1, 1, d),
        "flow_lm.speaker_proj_weight": (d, 32),
        "flow_lm.out_eos.weight": (1, d),
        "flow_lm.flow_net.cond_embed.weight": (flow, d),
    }
    for i in range(6):
        p = f"flow_lm.transformer.layers.{i}"
        out[f"{p}.self_attn.in_proj.weight"] = (3 * d, d)
        out[f"{p}.self_attn.out_proj.weight"] = (d, d)
        out[f"{p}.linear1.weight"] = (ffn, d)
        out[f"{p}.linear2.weight"] = (d, ffn)
        for n in ("norm1", "norm2"):
            out[f"{p}.{n}.weight"] = (d,)
            out[f"{p}.{n}.bias"] = (d,)
    for i in range(6):
        p = f"flow_lm.flow_net.res_blocks.{i}"
        out[f"{p}.mlp.0.weight"] = (flow, flow)
        out[f"{p}.mlp.2.weight"] = (flow, flow)
        out[f"{p}.adaLN_modulation.1.weight"] = (3 * flow, flow)
    # Mimi: about 20 M parameters in convolutions and two small transformers.
    for side in ("encoder", "decoder"):
        for i in range(2):
            p = f"mimi.{side}_transformer.transformer.layers.{i}"
            out[f"{p}.self_attn.in_proj.weight"] = (1536, 512)
            out[f"{p}.self_attn.out_proj.weight"] = (512, 512)
            out[f"{p}.linear1.weight"] = (2048, 512)
            out[f"{p}.linear2.weight"] = (512, 2048)
        for i, (cout, cin, k) in enumerate(((512, 512, 7), (512, 256, 12), (256, 128, 10))):
            out[f"mimi.{side}.model.{i}.conv.weight"] = (cout, cin, k)
    out["mimi.downsample.conv.conv.weight"] = (32, 512, 32)
    out["mimi.upsample.convtr.convtr.weight"] = (512, 1, 32)
    return out


def write_bf16(path: Path, seed: int = 0) -> int:
    """Streams a random BF16 checkpoint to ``path`` (one tensor in memory at a time)."""
    rng = np.random.default_rng(seed)
    header: dict[str, dict] = {}
    at = 0
    for name, shape in shapes().items():
        n = int(np.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [at, at + n]}
        at += n
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(len(raw).to_bytes(8, "little") + raw)
        for shape in shapes().values():
            values = (rng.standard_normal(shape, np.float32) * 0.02).astype(np.float32)
            f.write((values.view(np.uint32) >> 16).astype("<u2").tobytes())
    return sum(int(np.prod(s)) for s in shapes().values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="write the BF16 file here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "bf16.safetensors"
        params = write_bf16(path)
        size = path.stat().st_size
        env_path = str(ROOT)
        result = subprocess.run(
            [sys.executable, "-c", CHILD, str(path)],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
        )
    r = json.loads(result.stdout)
    mb = 1024 * 1024
    used = (r["peak_kb"] - r["base_kb"]) * 1024
    print(f"parameters       {params / 1e6:.1f} M in {r['tensors']} tensors")
    print(f"BF16 file        {size / mb:.0f} MB")
    print(f"float32 weights  {r['float32_bytes'] / mb:.0f} MB")
    print(f"baseline RSS     {r['base_kb'] / 1024:.0f} MB (interpreter, numpy, pocketcli)")
    print(f"peak RSS         {r['peak_kb'] / 1024:.0f} MB")
    print(f"read cost        {used / mb:.0f} MB = {used / r['float32_bytes']:.2f} x float32 size")
    print(f"read time        {r['seconds']:.2f} s")


if __name__ == "__main__":
    main()
