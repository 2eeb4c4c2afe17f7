// The browser pack's documented generation steps (issue 24), written from the pack's model
// card, not from pockettts. One module for both readers: web_driver.mjs runs it under
// onnxruntime-node, web_page.html in a browser page under onnxruntime-web (WASM).
//
// generate(ort, io, job) -> {audio: Float32Array, the samples of every chunk one after the
//   other; noiseUsed: how many noise rows were drawn}.
//   ort: the onnxruntime module (node or web);
//   io:  { json(name), floats(name) -> Float32Array, session(name) -> InferenceSession },
//        each reading a file of the pack by its path inside the pack;
//   job: {"chunks": [{"tokens": [...], "frames_after_eos": n, "max_frames": n}],
//         "noise": [[latent_dim floats] per generated frame, in order]}.
export async function generate(ort, io, job) {
  const cfg = await io.json("pocket_tts.json");
  const D = cfg.d_model, L = cfg.latent_dim, H = cfg.kv_heads, Dh = cfg.head_dim;
  const [textEmbed, flowLm, mimi] = await Promise.all(
    ["text_embed.onnx", "flow_lm.onnx", "mimi_decoder.onnx"].map((n) => io.session(`onnx/${n}`)));
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
  const voice = await io.floats(cfg.voices.alba.file);
  const voiceCache = (await flow(T(voice, [1, voice.length / D, D]), zeros(), emptyCache())).cache;
  const bos = T(await io.floats(cfg.bos_emb.file), [1, 1, D]);
  const fade = Math.round((cfg.sample_rate * cfg.fade_in_ms) / 1000);
  const pieces = [];
  let noiseIndex = 0;
  for (const chunk of job.chunks) {
    const ids = new ort.Tensor("int64", BigInt64Array.from(chunk.tokens.map(BigInt)), [1, chunk.tokens.length]);
    const { text_emb } = await textEmbed.run({ token_ids: ids });
    let { cache } = await flow(text_emb, zeros(), { ...voiceCache });
    let emb = bos, end = null;
    const state = {};
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
  return { audio, noiseUsed: noiseIndex };
}
