// Run a web module in Node from the command line (used by the tests and bench/):
//
//   node driver/web/vta_node.mjs MODEL.wasm INPUTS.bin OUTPUTS.bin [--repeat N]
//
// INPUTS.bin holds every input's raw bytes (little-endian, row-major) one after the other
// in the model's order; OUTPUTS.bin receives every output's bytes the same way. With
// --repeat N the model runs N more times and one JSON line {"median_ms": ...} is printed.
// Exit status 0 on success, 2 with the runtime's message on stderr on bad input.
import { readFileSync, writeFileSync } from "node:fs";
import { loadModel, VtaModelError } from "./vta_runtime.mjs";

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int32: Int32Array, int64: BigInt64Array,
};

async function main(argv) {
  const [wasmPath, inPath, outPath, flag, count] = argv;
  if (!wasmPath || !inPath || !outPath || (flag !== undefined && flag !== "--repeat")) {
    throw new VtaModelError("usage: vta_node.mjs MODEL.wasm INPUTS.bin OUTPUTS.bin [--repeat N]");
  }
  const model = await loadModel(readFileSync(wasmPath));
  const raw = readFileSync(inPath);
  const inputs = {};
  let at = 0;
  for (const { name, shape, dtype } of model.inputs) {
    const A = ARRAYS[dtype], nbytes = shape.reduce((a, b) => a * b, 1) * A.BYTES_PER_ELEMENT;
    // a short file gives a short array, which run() refuses with the sizes
    const copy = new Uint8Array(raw.subarray(at, at + nbytes));        // aligned copy
    inputs[name] = new A(copy.buffer, 0, Math.floor(copy.length / A.BYTES_PER_ELEMENT));
    at += nbytes;
  }
  let out = model.run(inputs);
  writeFileSync(outPath, Buffer.concat(model.outputs.map(
    ({ name }) => Buffer.from(out[name].buffer, out[name].byteOffset, out[name].byteLength))));
  if (flag === "--repeat") {
    const times = [];
    for (let i = 0; i < Number(count); i++) {
      const t0 = performance.now();
      out = model.run(inputs);
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    console.log(JSON.stringify({ median_ms: times[Math.floor(times.length / 2)] }));
  }
}

// bad input (the runtime's errors, a file that cannot be read or written): one line;
// anything else is a bug in this script or the runtime: its stack
main(process.argv.slice(2)).catch((err) => {
  const fileError = typeof err?.code === "string" && typeof err?.path === "string";
  if (err instanceof VtaModelError) console.error(err.message);
  else if (fileError) console.error(`${err.path}: ${err.code === "ENOENT" ? "no such file" : err.message}`);
  else console.error(err.stack);
  process.exit(2);
});
