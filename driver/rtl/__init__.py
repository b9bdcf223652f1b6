"""The RTL backend: the Amaranth accelerator compiled by Verilator, driven by cocotb.

``run_programs(cfg, [(program, dram_image), ...], dram_timing)`` runs many
programs back to back, without reset, in one simulator process and returns
one ``RtlResult`` (final DRAM image, cycle count, busy counters) per program.
``build_model`` compiles (and caches) the Verilator model of a config.
"""
from driver.rtl.build import build_model, export_verilog
from driver.rtl.run import RtlError, RtlResult, run_programs

__all__ = ["build_model", "export_verilog", "run_programs", "RtlResult", "RtlError"]
