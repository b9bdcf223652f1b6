"""FPGA board targets and bitstream builds (Yosys + nextpnr from YoWASP).

One concept per module:

- ``protocol``: the UART host protocol (pure Python; the driver imports it).
- ``uart``, ``bridge``, ``memory``, ``soc``: the SoC RTL (accelerator + block
  RAM as DRAM + UART host bridge); ``top`` and ``pll``: the board top level.
- ``boards``: the boards, their devices, clocks and the presets that fit.
- ``build`` and ``report``: ``vta fpga build``: bitstream + ``report.json``;
  ``seeds`` (``--seeds N``: several placements, the fastest kept) and
  ``critical_path`` (the slowest path in words) serve them.
- ``xilinx_estimate``: ``vta fpga estimate``: Xilinx resources from Yosys's
  ``synth_xilinx`` against a part's totals, without Vivado.

The host side is ``driver.backends.fpga``; ``bench/fpga_fit.py`` tabulates
presets x boards.
"""
