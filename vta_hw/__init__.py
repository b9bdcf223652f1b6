"""The accelerator contract (config, ISA, timing, program container) and its RTL (``vta_hw.rtl``).

Everything outside ``vta_hw.rtl`` is pure Python (numpy only), shared by the
compiler, the simulators, the driver and the FPGA flow.
"""
