"""The board registry: each record makes its own platform; unknown names are named."""
import pytest

from fpga.boards import BOARDS, BoardError, check_preset, get_board


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_each_board_makes_a_fresh_platform(name):
    board = BOARDS[name]
    a, b = board.platform(), board.platform()
    assert a is not b and a.default_clk_frequency > 0
    assert board.smallest in board.fits or not board.fits or board.smallest == board.fits[0]


def test_unknown_board_and_preset_name_the_value_and_the_choices():
    with pytest.raises(BoardError, match=r"no board named 'de10'; boards: ulx3s-85f, "):
        get_board("de10")
    with pytest.raises(BoardError, match=r"no preset named '9x9'; presets: 1x16_"):
        check_preset("9x9")
