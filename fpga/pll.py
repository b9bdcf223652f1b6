"""PLL settings and instances: the board clock in, the SoC clock out.

``ecp5_pll(fin, fout)`` and ``ice40_pll(fin, fout)`` search the divider
settings (ECP5 EHXPLLL: PFD >= 3.125 MHz, VCO 400..800 MHz, as Lattice's
``ecppll``; iCE40 SB_PLL40: PFD 10..133 MHz, VCO 533..1066 MHz, as
``icepll``) and return the closest; ``xilinx_mmcm`` does the same for a
7-series MMCME2_BASE (VCO 600..1200 MHz). Each returns ``(achieved_hz,
params)``; ``pll_instance`` builds the Amaranth ``Instance``.

Raises ValueError when no setting comes within 1 % of the request.
"""
from __future__ import annotations

from amaranth import Const, Instance, Signal


def _check(fin: float, fout: float, got: float, what: str) -> None:
    if abs(got - fout) > 0.01 * fout:
        raise ValueError(f"the {what} cannot make {fout / 1e6:g} MHz from {fin / 1e6:g} MHz "
                         f"(closest {got / 1e6:.3f} MHz); pick another --clock")


def ecp5_pll(fin: float, fout: float) -> tuple[float, dict]:
    best = None
    for ref in range(1, 129):
        pfd = fin / ref
        if pfd < 3.125e6:
            break
        for fb in range(1, 81):
            for op in range(1, 129):
                vco = pfd * fb * op
                if not 400e6 <= vco <= 800e6:
                    continue
                got = pfd * fb
                if got > 400e6:
                    continue
                if best is None or abs(got - fout) < abs(best[0] - fout):
                    best = (got, {"CLKI_DIV": ref, "CLKFB_DIV": fb, "CLKOP_DIV": op})
    got = best[0] if best else 0.0
    _check(fin, fout, got, "ECP5 PLL")
    return best


def ice40_pll(fin: float, fout: float) -> tuple[float, dict]:
    best = None
    for divr in range(16):
        pfd = fin / (divr + 1)
        if not 10e6 <= pfd <= 133e6:
            continue
        for divf in range(128):
            vco = pfd * (divf + 1)
            if not 533e6 <= vco <= 1066e6:
                continue
            for divq in range(1, 7):
                got = vco / (1 << divq)
                if best is None or abs(got - fout) < abs(best[0] - fout):
                    rng = next(k for k, lim in enumerate((17e6, 26e6, 44e6, 66e6, 101e6), 1)
                               if pfd < lim) if pfd < 101e6 else 6
                    best = (got, {"DIVR": divr, "DIVF": divf, "DIVQ": divq, "FILTER_RANGE": rng})
    got = best[0] if best else 0.0
    _check(fin, fout, got, "iCE40 PLL")
    return best


def xilinx_mmcm(fin: float, fout: float) -> tuple[float, dict]:
    best = None
    for d in range(1, 11):
        for mult in range(2, 65):
            vco = fin * mult / d
            if not 600e6 <= vco <= 1200e6:
                continue
            o = max(1, min(128, round(vco / fout)))
            got = vco / o
            if best is None or abs(got - fout) < abs(best[0] - fout):
                best = (got, {"DIVCLK_DIVIDE": d, "CLKFBOUT_MULT_F": float(mult),
                              "CLKOUT0_DIVIDE_F": float(o)})
    got = best[0] if best else 0.0
    _check(fin, fout, got, "MMCM")
    return best


def add_pll(m, family: str, fin: float, fout: float, clk_in, clk_out, locked) -> None:
    """Add to module ``m`` the PLL of ``family`` ("ecp5", "ice40", "xilinx"): ``clk_in``
    at ``fin`` Hz to ``clk_out`` at ``fout``; ``locked`` goes high once it is stable."""
    if family == "ecp5":
        _, p = ecp5_pll(fin, fout)
        m.submodules.pll = Instance(
            "EHXPLLL",
            a_FREQUENCY_PIN_CLKI=f"{fin / 1e6:g}", a_FREQUENCY_PIN_CLKOP=f"{fout / 1e6:g}",
            a_ICP_CURRENT="12", a_LPF_RESISTOR="8", a_MFG_ENABLE_FILTEROPAMP="1",
            a_MFG_GMCREF_SEL="2",
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA", p_CLKOP_ENABLE="ENABLED",
            p_CLKI_DIV=p["CLKI_DIV"], p_CLKFB_DIV=p["CLKFB_DIV"], p_CLKOP_DIV=p["CLKOP_DIV"],
            p_CLKOP_CPHASE=max(p["CLKOP_DIV"] // 2 - 1, 0), p_CLKOP_FPHASE=0,
            p_FEEDBK_PATH="CLKOP",
            i_CLKI=clk_in, i_CLKFB=clk_out, i_RST=Const(0), i_STDBY=Const(0),
            i_PHASESEL0=Const(0), i_PHASESEL1=Const(0), i_PHASEDIR=Const(0),
            i_PHASESTEP=Const(0), i_PHASELOADREG=Const(0), i_PLLWAKESYNC=Const(0),
            i_ENCLKOP=Const(0), o_CLKOP=clk_out, o_LOCK=locked)
    elif family == "ice40":
        _, p = ice40_pll(fin, fout)
        m.submodules.pll = Instance(
            "SB_PLL40_CORE", p_FEEDBACK_PATH="SIMPLE", p_DIVR=p["DIVR"], p_DIVF=p["DIVF"],
            p_DIVQ=p["DIVQ"], p_FILTER_RANGE=p["FILTER_RANGE"],
            i_REFERENCECLK=clk_in, i_RESETB=Const(1), i_BYPASS=Const(0),
            o_PLLOUTGLOBAL=clk_out, o_LOCK=locked)
    elif family == "xilinx":
        _, p = xilinx_mmcm(fin, fout)
        fb, clk0 = Signal(), Signal()
        m.submodules.pll = Instance(
            "MMCME2_BASE", p_CLKIN1_PERIOD=1e9 / fin, p_DIVCLK_DIVIDE=p["DIVCLK_DIVIDE"],
            p_CLKFBOUT_MULT_F=p["CLKFBOUT_MULT_F"], p_CLKOUT0_DIVIDE_F=p["CLKOUT0_DIVIDE_F"],
            i_CLKIN1=clk_in, i_CLKFBIN=fb, o_CLKFBOUT=fb, i_RST=Const(0), i_PWRDWN=Const(0),
            o_CLKOUT0=clk0, o_LOCKED=locked)
        m.submodules.pll_bufg = Instance("BUFG", i_I=clk0, o_O=clk_out)
    else:
        raise ValueError(f"family must be one of ecp5, ice40, xilinx, not {family!r}")
