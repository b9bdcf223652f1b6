"""The Dask runner: measurements on a Dask cluster (``distributed`` from PyPI).

Each candidate is one task submitted to the scheduler, tagged with a worker
resource ``measure=1`` when the workers declare it (start them with
``dask worker tcp://HOST:8786 --resources measure=1 --nthreads 1``), so each
worker machine measures one candidate at a time; otherwise every worker thread
takes candidates. Results are gathered with a timeout; a candidate whose future
fails or times out is recorded as an error. CPU candidates should run on
workers started with ``--nworkers 1 --nthreads 1`` (a second measurement on the
same machine distorts timings); accelerator (cycle-model) candidates may run
in parallel.
"""
from __future__ import annotations

from compiler.autotune.tuner import MeasureResult
from vta_hw.errors import VtaError

from .measure import check_vta_conv2d, measure


class SchedulerUnreachable(VtaError, ConnectionError):
    """The Dask scheduler did not answer within the timeout (the message names it)."""


class DaskRunner:
    """Runner over a ``distributed.Client`` (or a scheduler address ``tcp://HOST:8786``).

    Args:
        client: a ``distributed.Client`` or the scheduler's address.
        timeout: seconds to wait for a candidate's result.
        options: measurement options (``measure.py``).

    Raises:
        SchedulerUnreachable: (a ConnectionError) the scheduler cannot be reached within
            ``timeout`` (names the address).
    """

    def __init__(self, client, timeout: float = 120.0, **options):
        from distributed import Client
        self._own = isinstance(client, str)
        if isinstance(client, str):
            try:
                client = Client(client, timeout=timeout)
            except (OSError, TimeoutError) as e:
                raise SchedulerUnreachable(
                    f"cannot reach the Dask scheduler at {client!r} within {timeout:g} s ({e}); "
                    "start one with `dask scheduler` and workers with `dask worker ADDRESS "
                    "--nthreads 1`") from None
        self.client, self.timeout, self.options = client, timeout, options
        info = client.scheduler_info()
        has = [w for w in info.get("workers", {}).values() if "measure" in w.get("resources", {})]
        self.resources = {"measure": 1} if has else None

    def measure(self, task, configs) -> list[MeasureResult]:
        futures = [self.client.submit(measure, task.kind, task.payload, c, self.options,
                                      pure=False, resources=self.resources) for c in configs]
        out = []
        for f in futures:
            try:
                status, value = f.result(timeout=self.timeout)
            except Exception as e:        # a lost worker or a timeout: this trial's error
                f.cancel()
                out.append(MeasureResult(error=f"dask: {type(e).__name__}: {e}"[:500]))
                continue
            out.append(MeasureResult(costs=value) if status == "ok" else MeasureResult(error=value))
        return out

    def close(self) -> None:
        """Close the client if this runner opened it (from an address)."""
        if self._own:
            self.client.close()

    def check(self, task, config) -> "str | None":
        """Accelerator tasks: the bit-exact check of the chosen tiling (on a worker)."""
        if task.kind != "vta_conv2d":
            return None
        return self.client.submit(check_vta_conv2d, task.payload, config,
                                  pure=False).result(timeout=self.timeout)
