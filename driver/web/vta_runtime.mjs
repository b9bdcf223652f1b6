// The JavaScript runtime of web modules (model.wasm + model.json + params.bin, written by
// compiler.graph_lower.web): an ES module for Node (>= 18) and browsers, no dependencies.
//
//   import { loadModel, fetchModel } from "./vta_runtime.mjs";
//   const m = await loadModel(wasmBytes, { plan, params });   // plan: model.json (object or text),
//                                                              // params: params.bin (bytes)
//   const m = await fetchModel("model/");                      // the same three files by URL
//   const out = m.run({ image: new Float32Array(64) });        // name -> typed array
//   out.logits                                                 // Float32Array(10), a copy
//
// Every buffer lives at a fixed place in the module's linear memory (the plan's static
// memory plan above __heap_base); run() copies the inputs in, calls the kernels in order
// and copies the outputs out; it allocates nothing in WebAssembly memory. Bad input (an
// unknown or missing input name, a typed array of the wrong type or length, a truncated
// or foreign wasm file, a params.bin of the wrong size) throws a VtaModelError whose
// message names the thing, the bad value and the fix.

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
  ceil: Math.ceil, trunc: Math.trunc, round: Math.round, roundeven, rint: roundeven,
  nearbyint: roundeven, fmin: Math.min, fmax: Math.max, fma: (a, b, c) => a * b + c,
  fmod: (a, b) => a % b,
};
export const MATH_IMPORTS = Object.fromEntries(Object.entries(LIBM).flatMap(
  ([name, fn]) => [[name, fn], [name + "f", fn]]));

const ALIGN = 64;
const PAGE = 65536;

async function sha256Hex(bytes) {
  const subtle = globalThis.crypto && globalThis.crypto.subtle;
  if (!subtle) return null;                           // an insecure browser context
  const digest = new Uint8Array(await subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

function asBytes(what, data) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new VtaModelError(`${what} must be an ArrayBuffer or Uint8Array, not ${typeof data}`);
}

function checkPlan(plan) {
  if (typeof plan === "string") {
    try {
      plan = JSON.parse(plan);
    } catch (err) {
      throw new VtaModelError(`model.json is not JSON (${err.message}); rebuild the web module`);
    }
  }
  if (!plan || plan.format !== "vta-web" || plan.version !== 1) {
    throw new VtaModelError(`model.json must be format "vta-web" version 1, not ` +
      `${JSON.stringify(plan && plan.format)} version ${JSON.stringify(plan && plan.version)}; ` +
      "rebuild the web module with this runtime's compiler");
  }
  return plan;
}

async function compileWasm(bytes, plan) {
  const hash = await sha256Hex(bytes);
  if (plan.wasm_sha256 && hash !== null && hash !== plan.wasm_sha256) {
    throw new VtaModelError(`model.wasm (${bytes.length} bytes) is not the module model.json ` +
      "was built with (sha256 differs): the file is truncated or from another build; copy " +
      "both files again");
  }
  try {
    return await WebAssembly.compile(bytes);
  } catch (err) {
    throw new VtaModelError(`model.wasm (${bytes.length} bytes) is not a whole WebAssembly ` +
      `module (${err.message}); the file is truncated or damaged: rebuild or copy it again`);
  }
}

function mathImports(module) {
  const env = {};
  for (const imp of WebAssembly.Module.imports(module)) {
    if (imp.module !== "env" || imp.kind !== "function" || !(imp.name in MATH_IMPORTS)) {
      throw new VtaModelError(`model.wasm imports ${imp.module}.${imp.name} (${imp.kind}), ` +
        `which this runtime does not provide (it provides env.{${Object.keys(LIBM).join(",")}}` +
        "[f]); rebuild the module with the same version of the compiler and runtime");
    }
    env[imp.name] = MATH_IMPORTS[imp.name];
  }
  return { env };
}

/** A loaded web module: `run(inputs)` -> outputs; `inputs` / `outputs` describe them. */
export class VtaModel {
  constructor(instance, plan) {
    const ex = instance.exports;
    this.plan = plan;
    this.memory = ex.memory;
    this.base = Math.ceil(ex.__heap_base.value / ALIGN) * ALIGN;
    const need = this.base + plan.memory_bytes;
    if (need > this.memory.buffer.byteLength) {
      this.memory.grow(Math.ceil((need - this.memory.buffer.byteLength) / PAGE));
    }
    /** [{name, shape, dtype}] of the inputs and of the outputs */
    this.inputs = plan.inputs.map(({ name, shape, dtype }) => ({ name, shape, dtype }));
    this.outputs = plan.outputs.map(({ name, shape, dtype }) => ({ name, shape, dtype }));
    this.calls = plan.calls.map((c) => {
      const fn = ex[c.kernel];
      if (typeof fn !== "function") {
        throw new VtaModelError(`kernel ${c.kernel} named in model.json is not exported by ` +
          "model.wasm; the files do not belong together: copy all three from one build");
      }
      return { fn, args: c.args.map((a) => this.base + a), node: c.node, kernel: c.kernel };
    });
  }

  view(entry) {
    const Array_ = ARRAYS[entry.dtype];
    const n = entry.shape.reduce((a, b) => a * b, 1);
    return new Array_(this.memory.buffer, this.base + entry.offset, n);
  }

  /**
   * Run the model once.
   * @param {Object<string, TypedArray>} inputs every input by name, each a typed array of
   *   its dtype (float32 -> Float32Array) holding prod(shape) elements in row-major order.
   * @returns {Object<string, TypedArray>} every output by name (copies).
   * @throws {VtaModelError} an unknown, missing or wrongly typed or sized input; a kernel
   *   that fails or traps.
   */
  run(inputs) {
    if (!inputs || typeof inputs !== "object") {
      throw new VtaModelError(`run() takes an object of inputs by name, not ${inputs}`);
    }
    const names = this.plan.inputs.map((i) => i.name);
    for (const key of Object.keys(inputs)) {
      if (!names.includes(key)) {
        throw new VtaModelError(`unknown input ${JSON.stringify(key)}; the model's inputs ` +
          `are ${JSON.stringify(names)}`);
      }
    }
    for (const entry of this.plan.inputs) {
      const value = inputs[entry.name], Array_ = ARRAYS[entry.dtype];
      const n = entry.shape.reduce((a, b) => a * b, 1);
      if (value === undefined) {
        throw new VtaModelError(`input ${JSON.stringify(entry.name)} is missing; pass a ` +
          `${Array_.name} of ${n} elements (${entry.dtype}[${entry.shape}])`);
      }
      if (!(value instanceof Array_) || value.length !== n) {
        const got = value && value.constructor ? value.constructor.name : typeof value;
        const len = value && value.length !== undefined ? ` of ${value.length} elements` : "";
        throw new VtaModelError(`input ${JSON.stringify(entry.name)} must be a ${Array_.name} ` +
          `of ${n} elements (${entry.dtype}[${entry.shape}]), not a ${got}${len}`);
      }
      this.view(entry).set(value);
    }
    for (const { fn, args, node, kernel } of this.calls) {
      let rc;
      try {
        rc = fn(...args);
      } catch (err) {
        throw new VtaModelError(`kernel ${kernel} (node ${node}) trapped: ${err.message}`);
      }
      if (rc !== 0) {
        throw new VtaModelError(`kernel ${kernel} (node ${node}) returned ${rc}, not 0`);
      }
    }
    const out = {};
    for (const entry of this.plan.outputs) out[entry.name] = this.view(entry).slice();
    return out;
  }
}

/**
 * Load a web module from its three files' contents.
 * @param {ArrayBuffer|Uint8Array} wasmBytes model.wasm
 * @param {{plan: Object|string, params: ArrayBuffer|Uint8Array}} files model.json (parsed
 *   or text) and params.bin
 * @returns {Promise<VtaModel>}
 * @throws {VtaModelError} a truncated or foreign file, or files of different builds.
 */
export async function loadModel(wasmBytes, { plan, params } = {}) {
  plan = checkPlan(plan);
  const wasm = asBytes("model.wasm", wasmBytes);
  const blob = asBytes("params.bin", params === undefined ? new Uint8Array(0) : params);
  if (blob.length !== plan.params_bytes) {
    throw new VtaModelError(`params.bin holds ${blob.length} bytes, model.json's plan needs ` +
      `${plan.params_bytes}; the file is truncated or from another build: copy it again`);
  }
  const module = await compileWasm(wasm, plan);
  const instance = await WebAssembly.instantiate(module, mathImports(module));
  const model = new VtaModel(instance, plan);
  new Uint8Array(model.memory.buffer, model.base, blob.length).set(blob);
  return model;
}

/**
 * Fetch and load a web module's three files from the folder URL `base` (browser, or Node
 * with an http(s) URL).
 * @param {string} base folder URL, e.g. "model/"
 * @param {number} timeoutMs how long each file may take
 * @returns {Promise<VtaModel>}
 * @throws {VtaModelError} a file that cannot be fetched (with its URL and status) or is bad.
 */
export async function fetchModel(base, timeoutMs = 30000) {
  const get = async (name) => {
    const url = new URL(name, new URL(base, globalThis.location ? globalThis.location.href : undefined));
    let resp;
    try {
      resp = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    } catch (err) {
      throw new VtaModelError(`fetching ${url} failed (${err.message})`);
    }
    if (!resp.ok) throw new VtaModelError(`fetching ${url} gave HTTP ${resp.status}`);
    return new Uint8Array(await resp.arrayBuffer());
  };
  const [wasm, plan, params] = await Promise.all(
    ["model.wasm", "model.json", "params.bin"].map(get));
  return loadModel(wasm, { plan: new TextDecoder().decode(plan), params });
}
