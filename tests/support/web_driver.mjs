// A browser pack driver written from the pack's documented generation steps (issue 24),
// not from pockettts: run by onnxruntime-node (or, in a page, onnxruntime-web).
//
// node web_driver.mjs PACK_DIR JOB.json OUT.f32
// JOB.json: {"chunks": [{"tokens": [...], "frames_after_eos": n, "max_frames": n}],
//            "noise": [[latent_dim floats] per generated frame, in order]}
// Writes the float32 samples of every chunk, one after the other, to OUT.f32.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ort = require(process.env.ORT_MODULE || "onnxruntime-node");
const [packDir, jobPath, outPath] = process.argv.slice(2);
const cfg = JSON.parse(readFileSync(join(packDir, "pocket_tts.json"), "utf8"));
const job = JSON.parse(readFileSync(jobPath, "utf8"));
const D = cfg.d_model, L = cfg.latent_dim, H = cfg.kv_heads, Dh = cfg.head_dim;

const floats = (name) => {
  const b = readFileSync(join(packDir, name));
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
};
const session = (name) => ort.InferenceSession.create(join(packDir, "onnx", name));
const [textEmbed, flowLm, mimi] = await Promise.all(
  ["text_embed.onnx", "flow_lm.onnx", "mimi_decoder.onnx"].map(session));
const T = (data, dims) => new ort.Tensor("float32", data, dims);
const zeros = () => T(new Float32Array(L), [1, L]);

function emptyCache() {
  const feeds = {};
  for (let i = 0; i < cfg.num_layers; i++) {
    feeds[`past_key_${i}`] = T(new Float32Array(0), [1, H, 0, Dh]);
    feeds[`past_value_${i}`] = T(new Float32Array(0), [1, H, 0, Dh]);
  }
  return feeds;
}
async function flow(emb, noise, cache) {
  const out = await flowLm.run({ emb, noise, ...cache });
  const next = {};
  for (let i = 0; i < cfg.num_layers; i++) {
    next[`past_key_${i}`] = out[`present_key_${i}`];
    next[`past_value_${i}`] = out[`present_value_${i}`];
  }
  return { out, cache: next };
}

// The voice: flow_lm once on voice_alba.bin (zero noise, empty cache); keep its cache.
const voice = floats(cfg.voices.alba.file);
const voiceCache = (await flow(T(voice, [1, voice.length / D, D]), zeros(), emptyCache())).cache;
const bos = T(floats(cfg.bos_emb.file), [1, 1, D]);
const fade = Math.round((cfg.sample_rate * cfg.fade_in_ms) / 1000);
const pieces = [];
let noiseIndex = 0;
for (const chunk of job.chunks) {
  const ids = new ort.Tensor("int64", BigInt64Array.from(chunk.tokens.map(BigInt)), [1, chunk.tokens.length]);
  const { text_emb } = await textEmbed.run({ token_ids: ids });
  let { cache } = await flow(text_emb, zeros(), { ...voiceCache });
  let emb = bos, end = null;
  let state = {};
  for (const s of cfg.mimi_state) {
    const n = s.shape.reduce((a, b) => a * b, 1);
    state[s.name] = s.dtype === "int64"
      ? new ort.Tensor("int64", new BigInt64Array(n), s.shape)
      : T(new Float32Array(n), s.shape);
  }
  const chunkAudio = [];
  for (let frame = 0; frame < chunk.max_frames; frame++) {
    if (end !== null && frame >= end + chunk.frames_after_eos) break; // that frame not kept
    const noise = T(Float32Array.from(job.noise[noiseIndex]), [1, L]);
    const step = await flow(emb, noise, cache);
    const eos = step.out.eos_logit.data[0];
    if (end === null && frame >= cfg.min_frames && eos > cfg.eos_threshold) end = frame;
    if (end !== null && frame >= end + chunk.frames_after_eos) break;
    noiseIndex++;
    cache = step.cache;
    emb = step.out.next_emb;
    const dec = await mimi.run({ latent: step.out.latent, ...state });
    for (const s of cfg.mimi_state) state[s.name] = dec[`${s.name}_out`];
    chunkAudio.push(Float32Array.from(dec.pcm.data));
  }
  if (chunkAudio.length) {
    const first = chunkAudio[0];
    for (let i = 0; i < fade && i < first.length; i++) first[i] *= i / (fade - 1);
  }
  pieces.push(...chunkAudio);
}
const total = pieces.reduce((n, p) => n + p.length, 0);
const audio = new Float32Array(total);
let at = 0;
for (const p of pieces) { audio.set(p, at); at += p.length; }
writeFileSync(outPath, Buffer.from(audio.buffer));
console.log(JSON.stringify({ samples: total, noise_used: noiseIndex }));
