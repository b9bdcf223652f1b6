"""The runtime's AMX permission request: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)."""
import ctypes
import errno

import pytest

from driver.runtime import amx
from driver.runtime.errors import RuntimeModuleError


def test_needs_amx_reads_manifest_features():
    assert amx.needs_amx({"triple": "x86_64", "features": ["+avx512f", "+amx-tile", "+amx-int8"]})
    assert not amx.needs_amx({"triple": "x86_64", "features": ["+avx512vnni"]})
    assert not amx.needs_amx(None)


def test_request_passes_the_linux_numbers():
    calls = []
    amx.request_amx("m1", syscall=lambda *a: calls.append(a) or 0)
    assert calls == [(158, 0x1023, 18)]


def test_refusal_names_errno_and_fix():
    def refuse(*args):
        ctypes.set_errno(errno.EINVAL)
        return -1
    with pytest.raises(RuntimeModuleError, match=r"m2: the kernel refused AMX tile data.*errno "
                       rf"{errno.EINVAL}.*Linux 5\.16\+.*-mcpu=x86-64-v4"):
        amx.request_amx("m2", syscall=refuse)


def test_real_syscall_answers_or_refuses_clearly():
    # this machine's kernel either grants the tile state (AMX CPU) or refuses it: either way
    # no SIGILL and no bare OSError
    try:
        amx.request_amx("host")
    except RuntimeModuleError as err:
        assert "refused AMX tile data" in str(err) or "x86-64 Linux" in str(err)
