"""Simulators of the accelerator.

- ``sim.functional``: the golden model (``run``), no timing.
- ``sim.machine``: SRAM state and instruction semantics used by it.
- ``sim.errors``: the exceptions a bad program raises.
- ``sim.random_program``: seeded random race-free programs for differential tests.
- ``sim.cycle``, ``sim.dram``, ``sim.trace``: the cycle-accurate model.
"""
