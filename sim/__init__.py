"""Simulators of the accelerator.

- ``sim.functional``: the golden model (``run``), no timing; fetch, token queues, schedules.
- ``sim.machine``: SRAM state and the semantics of each instruction (``Machine``).
- ``sim.errors``: the exceptions a bad program raises.
- ``sim.counters``: what a functional run counts.
- ``sim.races``: race detector (cross-module accesses the tokens leave unordered).
- ``sim.tokens``: places dependency tokens for generated programs.
- ``sim.random_program``: seeded random race-free programs for differential tests.
- ``sim.cycle``, ``sim.dram``, ``sim.trace``: the cycle-accurate model.
"""
