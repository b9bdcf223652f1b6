// The JavaScript runtime of web modules: one .wasm file (compiler.graph_lower.web: a model
// compiled ahead of time for wasm32, parameters inside, its interface in the custom section
// "vta.model"). An ES module for Node (>= 18) and browsers, no dependencies.
//
//   import { loadModel, fetchModel } from "./vta_runtime.mjs";
//   const m = await loadModel(wasmBytes);                // ArrayBuffer or Uint8Array
//   const m = await fetchModel("model.wasm");            // the same by URL
//   m.inputs, m.outputs                                  // [{name, shape, dtype}]
//   const out = m.run({ image: new Float32Array(64) });  // every input by name
//   out.logits                                           // Float32Array(10), a copy
//
// Every buffer lives at a fixed place in the module's linear memory (the static plan in
// "vta.model", above __heap_base): run() copies the inputs in, calls vtamod_run once and
// copies the outputs out; it allocates nothing in WebAssembly memory. Bad input (an
// unknown or missing input name, a typed array of the wrong type or length, a truncated
// or foreign wasm file) throws a VtaModelError whose message names the thing, the bad
// value and the fix.

export class VtaModelError extends Error {
  constructor(message) {
    super(message);
    this.name = "VtaModelError";
  }
}

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int16: Int16Array, uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array,
  int64: BigInt64Array, uint64: BigUint64Array,
};

// erf by Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7, below float32's resolution
// of erf's values near 1); JavaScript's Math has no erf.
function erf(x) {
  const s = Math.sign(x), a = Math.abs(x), t = 1 / (1 + 0.3275911 * a);
  const y = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t
    + 0.254829592) * t;
  return s * (1 - y * Math.exp(-a * a));
}

// C's round (half away from zero; Math.round goes half up) and roundeven (half to even)
const round = (x) => Math.sign(x) * Math.round(Math.abs(x));
const roundeven = (x) => {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
};

// libm functions the kernels may import (module "env"), float ("f") and double forms.
const LIBM = {
  exp: Math.exp, exp2: (x) => 2 ** x, log: Math.log, log2: Math.log2, log10: Math.log10,
  sqrt: Math.sqrt, sin: Math.sin, cos: Math.cos, tan: Math.tan, tanh: Math.tanh,
  pow: Math.pow, atan: Math.atan, asin: Math.asin, acos: Math.acos, sinh: Math.sinh,
  cosh: Math.cosh, atan2: Math.atan2, erf, fabs: Math.abs, floor: Math.floor,
  ceil: Math.ceil, trunc: Math.trunc, round, roundeven, rint: roundeven,
  nearbyint: roundeven, fmin: Math.min, fmax: Math.max, fma: (a, b, c) => a * b + c,
  fmod: (a, b) => a % b,
};
export const MATH_IMPORTS = Object.fromEntries(Object.entries(LIBM).flatMap(
  ([name, fn]) => [[name, fn], [name + "f", fn]]));


const SECTION = "vta.model";
const ALIGN = 64;
const PAGE = 65536;
// vtamod_run's own status codes (compiler/graph_lower/aot.py)
const STATUS = { "-1": "a NULL pointer", "-2": "a pointer that is not 64-byte aligned" };

function asBytes(data) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new VtaModelError(`the model must be the .wasm file's bytes (ArrayBuffer or ` +
    `Uint8Array), not ${data === null ? "null" : typeof data}`);
}

async function compileWasm(bytes) {
  let module;
  try {
    module = await WebAssembly.compile(bytes);
  } catch (err) {
    throw new VtaModelError(`the .wasm file (${bytes.length} bytes) is not a whole ` +
      `WebAssembly module (${err.message}); it is truncated or damaged: build or copy it again`);
  }
  const sections = WebAssembly.Module.customSections(module, SECTION);
  if (sections.length !== 1) {
    throw new VtaModelError(`the .wasm file (${bytes.length} bytes) has no "${SECTION}" ` +
      "section: it is truncated, or not a model built by compiler.graph_lower.web " +
      "(build it with build_web(model))");
  }
  let doc;
  try {
    doc = JSON.parse(new TextDecoder().decode(sections[0]));
  } catch (err) {
    throw new VtaModelError(`the module's "${SECTION}" section is not JSON (${err.message}); ` +
      "the file is damaged: build or copy it again");
  }
  if (doc.format !== "vta-web" || doc.version !== 1) {
    throw new VtaModelError(`the module's "${SECTION}" section is format ` +
      `${JSON.stringify(doc.format)} version ${doc.version}, this runtime reads "vta-web" ` +
      "version 1: rebuild the module or use the runtime of its release");
  }
  return { module, doc };
}

function mathImports(module) {
  const env = {};
  for (const imp of WebAssembly.Module.imports(module)) {
    if (imp.module !== "env" || imp.kind !== "function" || !(imp.name in MATH_IMPORTS)) {
      throw new VtaModelError(`the module imports ${imp.module}.${imp.name} (${imp.kind}), ` +
        `which this runtime does not provide (it provides env.{${Object.keys(LIBM).join(",")}}` +
        "[f]); rebuild the module with the compiler of this runtime's release");
    }
    env[imp.name] = MATH_IMPORTS[imp.name];
  }
  return { env };
}

const count = (shape) => shape.reduce((a, b) => a * b, 1);

/** A loaded web module: `run(inputs)` -> outputs; `inputs` / `outputs` describe them. */
export class VtaModel {
  constructor(instance, doc) {
    const ex = instance.exports;
    this.doc = doc;
    this.memory = ex.memory;
    this.entry = ex[doc.entry];
    if (typeof this.entry !== "function") {
      throw new VtaModelError(`the module does not export its entry ${doc.entry}; rebuild it`);
    }
    this.base = Math.ceil(ex.__heap_base.value / ALIGN) * ALIGN;
    const need = this.base + doc.memory_bytes;
    if (need > this.memory.buffer.byteLength) {
      this.memory.grow(Math.ceil((need - this.memory.buffer.byteLength) / PAGE));
    }
    /** [{name, shape, dtype}] of the inputs and of the outputs, in the entry's order */
    this.inputs = doc.inputs.map(({ name, shape, dtype }) => ({ name, shape, dtype }));
    this.outputs = doc.outputs.map(({ name, shape, dtype }) => ({ name, shape, dtype }));
    /** bytes of scratch one run uses and of parameters held as constant data */
    this.workspaceBytes = doc.workspace_bytes;
    this.constantBytes = doc.constant_bytes;
    const ptrs = new Uint32Array(this.memory.buffer);
    doc.inputs.forEach((e, i) => { ptrs[(this.base + doc.input_ptrs) / 4 + i] = this.base + e.offset; });
    doc.outputs.forEach((e, i) => { ptrs[(this.base + doc.output_ptrs) / 4 + i] = this.base + e.offset; });
  }

  view(entry) {
    return new ARRAYS[entry.dtype](this.memory.buffer, this.base + entry.offset, count(entry.shape));
  }

  /**
   * Run the model once.
   * @param {Object<string, TypedArray>} inputs every input by name, each a typed array of
   *   its dtype (float32 -> Float32Array) holding prod(shape) elements in row-major order.
   * @returns {Object<string, TypedArray>} every output by name (copies).
   * @throws {VtaModelError} an unknown, missing or wrongly typed or sized input; the entry
   *   failing (its status) or trapping.
   */
  run(inputs) {
    if (!inputs || typeof inputs !== "object" || ArrayBuffer.isView(inputs)) {
      throw new VtaModelError("run() takes an object of inputs by name, e.g. " +
        `{${JSON.stringify(this.inputs[0] && this.inputs[0].name)}: Float32Array}, not ${inputs}`);
    }
    const names = this.doc.inputs.map((i) => i.name);
    for (const key of Object.keys(inputs)) {
      if (!names.includes(key)) {
        throw new VtaModelError(`unknown input ${JSON.stringify(key)}; the model's inputs ` +
          `are ${JSON.stringify(names)}`);
      }
    }
    for (const entry of this.doc.inputs) {
      const value = inputs[entry.name], Array_ = ARRAYS[entry.dtype], n = count(entry.shape);
      if (value === undefined) {
        throw new VtaModelError(`input ${JSON.stringify(entry.name)} is missing; pass a ` +
          `${Array_.name} of ${n} elements (${entry.dtype}[${entry.shape}])`);
      }
      if (!(value instanceof Array_) || value.length !== n) {
        const got = value !== null && value.constructor ? value.constructor.name : typeof value;
        const len = value && value.length !== undefined ? ` of ${value.length} elements` : "";
        throw new VtaModelError(`input ${JSON.stringify(entry.name)} must be a ${Array_.name} ` +
          `of ${n} elements (${entry.dtype}[${entry.shape}]), not a ${got}${len}`);
      }
      this.view(entry).set(value);
    }
    const d = this.doc, b = this.base;
    let rc;
    try {
      rc = this.entry(b + d.input_ptrs, b + d.output_ptrs, b + d.workspace);
    } catch (err) {
      throw new VtaModelError(`${d.entry} trapped (${err.message}); the module is damaged: rebuild it`);
    }
    if (rc !== 0) {
      throw new VtaModelError(`${d.entry} returned ${rc} (${STATUS[rc] || "a kernel failed"}), not 0`);
    }
    const out = {};
    for (const entry of this.doc.outputs) out[entry.name] = this.view(entry).slice();
    return out;
  }
}

/**
 * Load a web module.
 * @param {ArrayBuffer|Uint8Array} wasmBytes the .wasm file (build_web's output)
 * @returns {Promise<VtaModel>}
 * @throws {VtaModelError} a truncated, damaged or foreign file.
 */
export async function loadModel(wasmBytes) {
  const { module, doc } = await compileWasm(asBytes(wasmBytes));
  const instance = await WebAssembly.instantiate(module, mathImports(module));
  return new VtaModel(instance, doc);
}

/**
 * Fetch and load a web module by URL (browsers; Node with an http(s) URL).
 * @param {string} url the .wasm file, relative to the page in a browser
 * @param {number} timeoutMs how long the download may take
 * @returns {Promise<VtaModel>}
 * @throws {VtaModelError} a failed download (with the URL and HTTP status) or a bad file.
 */
export async function fetchModel(url, timeoutMs = 30000) {
  let where;
  try {
    where = globalThis.location ? new URL(url, globalThis.location.href) : new URL(url);
  } catch (err) {
    throw new VtaModelError(`fetchModel needs a URL (outside a page an absolute one, such as ` +
      `http://127.0.0.1:8000/model.wasm), not ${JSON.stringify(url)}; for a file use loadModel`);
  }
  let resp;
  try {
    resp = await fetch(where, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    throw new VtaModelError(`fetching ${where} failed (${err.message})`);
  }
  if (!resp.ok) throw new VtaModelError(`fetching ${where} gave HTTP ${resp.status}`);
  return loadModel(new Uint8Array(await resp.arrayBuffer()));
}
