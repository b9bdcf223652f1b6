// One Node process, two WebAssembly runtimes on one model (bench/deploy_wasm.py runs it):
//
//   node bench/deploy_wasm.mjs MODEL.wasm MODEL.onnx INPUT.bin ROUNDS REPEAT
//
// MODEL.wasm runs through driver/web/vta_runtime.mjs; MODEL.onnx through onnxruntime-web's
// wasm backend (npm package of driver/web, single thread; 1.30 ships SIMD builds only:
// dist/ort-wasm-simd-threaded.wasm, here with one thread). After a warm-up
// of each, ROUNDS alternating rounds of REPEAT runs each; prints one JSON line: best and
// median milliseconds per run of each, and the largest |difference| of their outputs.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const WEB = new URL("../driver/web/", import.meta.url);
const require = createRequire(new URL("package.json", WEB));
const ort = await import(pathToFileURL(require.resolve("onnxruntime-web")).href);
const { loadModel } = await import(new URL("vta_runtime.mjs", WEB).href);

const [wasmPath, onnxPath, inPath, rounds, repeat] = process.argv.slice(2);
ort.env.wasm.numThreads = 1;                 // single thread, as our module
ort.env.logLevel = "error";
const session = await ort.InferenceSession.create(readFileSync(onnxPath),
  { executionProviders: ["wasm"], graphOptimizationLevel: "all" });
const model = await loadModel(readFileSync(wasmPath));

const x = new Float32Array(new Uint8Array(readFileSync(inPath)).buffer);
const feedName = session.inputNames[0];
const tensor = new ort.Tensor("float32", x, model.inputs[0].shape);
const ours = () => model.run({ [model.inputs[0].name]: x })[model.outputs[0].name];
const theirs = async () => (await session.run({ [feedName]: tensor }))[session.outputNames[0]].data;

const a = ours(), b = await theirs();
let maxDiff = 0;
for (let i = 0; i < a.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));

const times = { vta: [], ort: [] };
for (let r = 0; r < Number(rounds); r++) {
  for (let k = 0; k < Number(repeat); k++) {
    const t0 = performance.now();
    ours();
    times.vta.push(performance.now() - t0);
  }
  for (let k = 0; k < Number(repeat); k++) {
    const t0 = performance.now();
    await theirs();
    times.ort.push(performance.now() - t0);
  }
}
const stat = (t) => {
  const s = [...t].sort((p, q) => p - q);
  return { best_ms: s[0], median_ms: s[Math.floor(s.length / 2)] };
};
console.log(JSON.stringify({ vta: stat(times.vta), ort: stat(times.ort), max_abs_diff: maxDiff,
  ort_version: ort.env.versions ? ort.env.versions.web : null }));
