// The digits demo: an 8x8 drawing pad (values 0..1, as the model was trained on images / 16)
// and held-out samples (samples.json); every change runs the model (digits.wasm) once.
import { fetchModel } from "./vta_runtime.mjs";

const N = 8;
const pad = document.getElementById("pad");
const ctx = pad.getContext("2d");
const cell = pad.width / N;
const image = new Float32Array(N * N);
const status = document.getElementById("status");
let model = null;

function draw() {
  for (let i = 0; i < N * N; i++) {
    const v = Math.round(255 * (1 - image[i]));
    ctx.fillStyle = `rgb(${v},${v},${v})`;
    ctx.fillRect((i % N) * cell, Math.floor(i / N) * cell, cell, cell);
  }
}

function classify() {
  draw();
  if (!model) return;
  const logits = model.run({ [model.inputs[0].name]: image })[model.outputs[0].name];
  const m = Math.max(...logits);
  const e = Array.from(logits, (v) => Math.exp(v - m));
  const sum = e.reduce((a, b) => a + b, 0);
  const best = e.indexOf(Math.max(...e));
  document.getElementById("result").textContent = String(best);
  document.getElementById("scores").innerHTML = e.map((v, k) =>
    `<div>${k} <span class="bar" style="width:${(150 * v / sum).toFixed(1)}px"></span> ` +
    `${(100 * v / sum).toFixed(1)}%</div>`).join("");
}

function paint(ev) {
  const r = pad.getBoundingClientRect();
  const x = ((ev.clientX - r.left) / r.width) * N, y = ((ev.clientY - r.top) / r.height) * N;
  for (let j = 0; j < N; j++) {
    for (let i = 0; i < N; i++) {
      const d2 = (i + 0.5 - x) ** 2 + (j + 0.5 - y) ** 2;
      image[j * N + i] = Math.min(1, image[j * N + i] + 0.6 * Math.exp(-d2 / 0.35));
    }
  }
  classify();
}

pad.addEventListener("pointerdown", (ev) => { pad.setPointerCapture(ev.pointerId); paint(ev); });
pad.addEventListener("pointermove", (ev) => { if (ev.buttons) paint(ev); });
document.getElementById("clear").addEventListener("click", () => { image.fill(0); classify(); });

async function main() {
  draw();
  try {
    const [m, samples] = await Promise.all([
      fetchModel("digits.wasm"),
      fetch("samples.json").then((r) => r.json()),
    ]);
    model = m;
    const picker = document.getElementById("picker");
    samples.forEach(({ label, image: px }) => {
      const b = document.createElement("button");
      b.textContent = String(label);
      b.dataset.label = String(label);
      b.title = `a held-out ${label}`;
      b.addEventListener("click", () => { image.set(px); classify(); });
      picker.appendChild(b);
    });
    status.textContent = `model loaded: ${(model.constantBytes / 1024).toFixed(1)} KiB of ` +
      `parameters, ${(model.workspaceBytes / 1024).toFixed(1)} KiB of workspace`;
    document.body.dataset.ready = "1";
  } catch (err) {
    status.textContent = String(err.message || err);
    status.className = "error";
  }
}

main();
