"""FPGA board targets and bitstream builds (Yosys + nextpnr from YoWASP)."""
