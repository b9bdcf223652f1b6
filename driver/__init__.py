"""Host side: runtime, device backends and the ``vta`` command line."""


def run_kernel(kernel, inputs, device="tsim", **options):
    """Run one accelerator kernel with numpy arrays (``driver.kernel.run_kernel``)."""
    from driver.kernel import run_kernel as run
    return run(kernel, inputs, device, **options)
