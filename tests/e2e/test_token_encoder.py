"""Token ids and attention masks (int64 inputs) kept as such end to end: a tiny BERT-style encoder
(embedding Gather on int64 ids, mask Cast, attention matmuls, Softmax, LayerNorm) on the CPU
and OpenCL targets against onnxruntime, and on the accelerator (tsim) bit-exact with the quantized oracle,
its six projections and feed-forward layers (dense on [1, seq, hidden]) on the GEMM core."""
import numpy as np
import pytest

from compiler import build_model
from compiler.quant import QOp, run as run_oracle
from driver.runtime import load_module
from tests.gpu_marks import needs_opencl
from tests.models.builders import build_token_encoder
from tests.models.oracle import assert_close, ort_run

SEQ, VOCAB = 8, 50


def _feeds(rng, count=1):
    ids = rng.integers(0, VOCAB, (count, SEQ)).astype(np.int64)
    real = SEQ - rng.integers(0, 3, (count, 1))                                   # padded tails
    mask = (np.arange(SEQ) < real).astype(np.int64)
    return {"input_ids": ids, "attention_mask": mask}


@pytest.fixture(scope="module")
def encoder():
    return build_token_encoder(seq=SEQ, vocab=VOCAB)


@pytest.mark.parametrize("target", ["llvm", pytest.param("opencl", marks=needs_opencl)])
def test_float_targets_keep_int64_inputs_and_match_onnxruntime(encoder, target, tmp_path):
    m = load_module(build_model(encoder, target=target).save(str(tmp_path / "enc.vtamod")))
    assert [dt for _, _, dt in m.input_info()] == ["int64", "int64"]
    feeds = _feeds(np.random.default_rng(0))
    (got,) = m(**feeds)
    assert_close(got, ort_run(encoder, feeds)[0], rel=1e-4, what=f"encoder on {target}")


def test_accelerator_keeps_int64_inputs_bit_exact_with_oracle(encoder, tmp_path):
    calib = _feeds(np.random.default_rng(1), count=8)
    cm = build_model(encoder, target="vta", calib=calib)
    qg = cm.plan.qgraph
    assert [qg.nodes[i].dtype for i in qg.inputs] == ["int64", "int64"]
    gathers = [n for n in qg.nodes if n.op is QOp.FLOAT and n.attrs["op"] == "TAKE"]
    assert gathers and all(qg.nodes[n.src[1]].dtype == "int64" for n in gathers)
    # q, k, v, output projection, two feed-forward layers; attention's activation matmuls on the CPU
    assert [(n.shape, n.target) for n in qg.nodes if n.op is QOp.DENSE] == \
        [((SEQ, 32), "vta")] * 4 + [((SEQ, 64), "vta"), ((SEQ, 32), "vta")]
    m = load_module(cm.save(str(tmp_path / "enc_vta.vtamod")), device="tsim")
    assert [dt for _, _, dt in m.input_info()] == ["int64", "int64"]
    feeds = _feeds(np.random.default_rng(2))
    (got,) = m(**feeds)
    np.testing.assert_array_equal(got, run_oracle(qg, feeds)[0])
    (ref,) = ort_run(encoder, feeds)
    cos = float(ref.ravel() @ got.ravel() / np.linalg.norm(ref) / np.linalg.norm(got))
    assert cos > 0.99, f"int8 encoder output drifts from fp32: cosine {cos:.4f}"
