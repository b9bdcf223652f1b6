"""Operator library: computes and their schedules per target (TVM's topi).

``cpu_matmul``: float32 GEMM with B packed into a blocked layout and a
register-blocked, vectorised, parallel micro-kernel schedule for LLVM CPUs.
"""
from compiler.topi.cpu_matmul import (MatmulConfig, candidate_configs, matmul_packed,
                                      schedule_matmul_cpu)

__all__ = ["MatmulConfig", "candidate_configs", "matmul_packed", "schedule_matmul_cpu"]
