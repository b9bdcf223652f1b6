"""VTAConfig: derived sizes, presets, and validation messages that name field, value and rule."""
from __future__ import annotations

import json

import pytest

from vta_hw.config import (DEFAULT_PRESET, ConfigError, VTAConfig, load_config, preset_names)


def test_default_preset_derived_sizes():
    cfg = load_config()
    assert cfg.name == DEFAULT_PRESET == "1x16_i8w8a32_15_15_18_17"
    assert (cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT) == (1, 16, 16)
    depths = (cfg.inp_depth, cfg.wgt_depth, cfg.acc_depth, cfg.uop_depth)
    assert depths == (2048, 1024, 2048, 8192)
    assert cfg.out_depth == cfg.acc_depth
    assert (cfg.inp_elem_bytes, cfg.wgt_elem_bytes, cfg.acc_elem_bytes, cfg.out_elem_bytes,
            cfg.uop_elem_bytes) == (16, 256, 64, 16, 4)
    assert (cfg.uop_dst_bits, cfg.uop_src_bits, cfg.uop_wgt_bits) == (11, 11, 10)
    assert (cfg.uop_bgn_bits, cfg.uop_end_bits) == (13, 14)
    assert cfg.bus_bytes == 8 and cfg.macs_per_cycle == 256
    assert cfg == VTAConfig()


def test_elem_bytes_and_depth_by_name():
    cfg = load_config()
    assert [cfg.elem_bytes(m) for m in ("uop", "wgt", "inp", "acc", "out")] == [4, 256, 16, 64, 16]
    assert cfg.depth("ACC") == 2048
    with pytest.raises(ConfigError,
                       match="buffer must be one of uop, wgt, inp, acc, out, not 'psum'"):
        cfg.depth("psum")


@pytest.mark.parametrize("name", preset_names())
def test_presets_round_trip(name):
    cfg = load_config(name)
    assert cfg.name == name
    assert VTAConfig.from_dict(cfg.to_dict()) == cfg
    assert load_config(cfg.name) == cfg


def test_preset_list_includes_small_and_default():
    names = preset_names()
    assert DEFAULT_PRESET in names
    assert any(n.startswith("1x4_") for n in names) and any(n.startswith("1x8_") for n in names)


def test_bus_width_suffix():
    assert VTAConfig(BUS_WIDTH=128).name == "1x16_i8w8a32_15_15_18_17_bus128"
    assert VTAConfig(BUS_WIDTH=16).name == "1x16_i8w8a32_15_15_18_17_bus16"


def test_block1_bus8_preset_derived_sizes():
    cfg = load_config("1x1_i8w8a32_10_9_9_11_bus8_cq0")
    assert (cfg.BATCH, cfg.BLOCK, cfg.bus_bytes, cfg.CMD_QUEUE_DEPTH) == (1, 1, 1, 0)
    assert (cfg.inp_elem_bytes, cfg.wgt_elem_bytes, cfg.acc_elem_bytes, cfg.out_elem_bytes,
            cfg.uop_elem_bytes) == (1, 1, 4, 1, 4)
    assert (cfg.inp_depth, cfg.wgt_depth, cfg.acc_depth, cfg.uop_depth) == (512, 512, 512, 256)
    assert cfg.macs_per_cycle == 1


def test_cmd_queue_depth_suffix_and_range():
    cfg = load_config("1x4_i8w8a32_10_10_12_12_bus32_cq1")
    assert cfg.CMD_QUEUE_DEPTH == 1 and cfg.BUS_WIDTH == 32
    assert VTAConfig().CMD_QUEUE_DEPTH == 16 and "_cq" not in VTAConfig().name
    assert VTAConfig(CMD_QUEUE_DEPTH=4).name == "1x16_i8w8a32_15_15_18_17_cq4"
    assert VTAConfig(CMD_QUEUE_DEPTH=0).name == "1x16_i8w8a32_15_15_18_17_cq0"  # rendezvous
    for bad in (-1, 65):
        with pytest.raises(ConfigError, match=r"CMD_QUEUE_DEPTH must be in \[0, 64\] "
                                              r"\(.*0 is the rendezvous"):
            VTAConfig(CMD_QUEUE_DEPTH=bad)


def test_config_from_json_file(tmp_path):
    p = tmp_path / "mine.json"
    p.write_text(json.dumps({"LOG_BLOCK": 3, "LOG_UOP_BUFF_SIZE": 12, "LOG_INP_BUFF_SIZE": 12,
                             "LOG_WGT_BUFF_SIZE": 13, "LOG_ACC_BUFF_SIZE": 14}))
    cfg = load_config(p)
    assert cfg.BLOCK == 8 and cfg.uop_depth == 1024 and cfg.name == "1x8_i8w8a32_12_12_13_14"
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="must hold a JSON object, not list"):
        load_config(bad)
    model = tmp_path / "model.onnx"
    model.write_bytes(b"\x08\x07")
    with pytest.raises(ConfigError, match="'.*model.onnx' is a file but not a JSON config"):
        load_config(model)


@pytest.mark.parametrize("kwargs,message", [
    ({"LOG_BLOCK": 7}, r"LOG_BLOCK must be in \[0, 6\] \(BLOCK is 1..64\), not 7"),
    ({"LOG_ACC_WIDTH": 4},
     r"LOG_ACC_WIDTH must be in \[5, 5\] \(the accumulators are int32\), not 4"),
    ({"LOG_BATCH": "0"}, r"LOG_BATCH must be an int, not '0'"),
    ({"LOG_BATCH": True}, r"LOG_BATCH must be an int, not True"),
    ({"BUS_WIDTH": 48}, r"BUS_WIDTH must be one of 8, 16, 32, 64, 128, 256, 512 bits, not 48"),
    ({"LOG_WGT_BUFF_SIZE": 7}, r"LOG_WGT_BUFF_SIZE=7 gives a 128-byte WGT buffer, smaller than "
                               r"one WGT element \(256 bytes for BATCH=1, BLOCK=16\); raise it "
                               r"to at least 8"),
    ({"LOG_BLOCK": 1, "LOG_INP_BUFF_SIZE": 18},
     r"an SRAM with 2\*\*17 entries needs more than the 16-bit sram_base field"),
    ({"LOG_BLOCK": 1, "LOG_INP_BUFF_SIZE": 17, "LOG_WGT_BUFF_SIZE": 18, "LOG_ACC_BUFF_SIZE": 19},
     r"uop fields need 48 bits \(dst 16 \+ src 16 \+ wgt 16\) but a uop has 32"),
])
def test_validation_messages(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        VTAConfig(**kwargs)


def test_unknown_fields_and_presets():
    with pytest.raises(ConfigError, match="unknown config field\\(s\\) LOG_FOO; known: BUS_WIDTH"):
        VTAConfig.from_dict({"LOG_FOO": 1})
    with pytest.raises(ConfigError, match="no preset or config file named 'nope'; presets: 1x16"):
        load_config("nope")
    assert issubclass(ConfigError, ValueError)
