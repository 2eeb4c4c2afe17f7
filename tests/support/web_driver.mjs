// The browser pack's generation steps (web_generate.mjs) under onnxruntime-node.
//
// node web_driver.mjs PACK_DIR JOB.json OUT.f32
// JOB.json: as web_generate.mjs's job. Writes the float32 samples to OUT.f32.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { generate } from "./web_generate.mjs";

const require = createRequire(import.meta.url);
const ort = require(process.env.ORT_MODULE || "onnxruntime-node");
const [packDir, jobPath, outPath] = process.argv.slice(2);
const io = {
  json: async (name) => JSON.parse(readFileSync(join(packDir, name), "utf8")),
  floats: async (name) => {
    const b = readFileSync(join(packDir, name));
    return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
  },
  // The pack's activations are float32: without this, the CPU provider fuses Mimi's
  // DequantizeLinear + MatMul into MatMulNBits at accuracy level 4 (int8 activations).
  session: (name) => ort.InferenceSession.create(join(packDir, name), {
    extra: { session: { qdq_matmulnbits_accuracy_level: "1" } },
  }),
};
const { audio, noiseUsed } = await generate(ort, io, JSON.parse(readFileSync(jobPath, "utf8")));
writeFileSync(outPath, Buffer.from(audio.buffer));
console.log(JSON.stringify({ samples: audio.length, noise_used: noiseUsed }));
