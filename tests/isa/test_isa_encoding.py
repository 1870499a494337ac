"""The encoding: layout sanity, the documented bit positions, and the round trip
instruction -> word -> instruction -> text -> word over all field values."""

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from glc.cli import main
from glc.errors import GlcError
from glc.hwconfig import LIMITS, load_config
from glc.isa.asm import assemble, disassemble, format_instruction
from glc.isa.encoding import Instruction, decode, encode, read_image, to_bytes, to_hex
from glc.isa.fields import OPCODES, WORD_BITS
from glc.isa.status import ErrorCode

DOC = Path(__file__).resolve().parents[2] / "docs" / "isa.md"
CONFIG = load_config("n16")


def test_fields_fit_the_word_and_never_overlap():
    for op in OPCODES:
        used = (1 << 4) - 1  # the opcode
        for f in op.fields:
            assert f.lsb + f.width <= WORD_BITS, (op.name, f.name)
            assert not used & f.mask, (op.name, f.name)
            used |= f.mask


def _documented(section: str) -> dict[str, tuple[int, int]]:
    """`| [msb:lsb] | `name` |` rows of one '### ' section of docs/isa.md."""
    text = DOC.read_text().split("### " + section, 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| \[(\d+)(?::(\d+))?\] \| `(\w+)`", text, re.M)
    return {name: (int(msb), int(lsb or msb)) for msb, lsb, name in rows}


def test_docs_state_the_positions_of_the_table():
    for section, ops in (("PRELOAD", ("preload",)), ("MATMUL", ("matmul",)), ("SYNC", ("sync",)),
                         ("VECTOR", ("vector",)), ("LOAD (opcode 1) and STORE", ("load", "store"))):
        documented = _documented(section)
        assert documented, section
        for name, (msb, lsb) in documented.items():
            f = next(f for o in OPCODES if o.name in ops for f in o.fields if f.name == name)
            assert (f.lsb + f.width - 1, f.lsb) == (msb, lsb), name
    level0 = re.search(r"level 0 = \[167:104\] \(count \[119:104\], stride \[151:120\],\s+"
                       r"ycoef\s+\[159:152\],\s+xcoef \[167:160\]\)", DOC.read_text())
    assert level0
    load = next(o for o in OPCODES if o.name == "load")
    assert [(f.lsb, f.width) for f in load.fields if f.name.endswith("0") and f.name != "y0"
            and f.name != "x0"] == [(104, 16), (120, 32), (152, 8), (160, 8)]


@st.composite
def instructions(draw):
    op = draw(st.sampled_from(OPCODES))
    values = {f.name: draw(st.integers(f.low, f.high)) for f in op.fields}
    return Instruction.make(op.name, **values)


@settings(max_examples=400, deadline=None)
@given(instructions())
def test_every_instruction_round_trips_through_word_and_text(instruction):
    word = encode(instruction)
    assert 0 <= word < 1 << WORD_BITS
    assert decode(word) == instruction
    text = format_instruction(instruction)
    assert assemble(text, CONFIG, strict=False).words == [word]


@settings(max_examples=50, deadline=None)
@given(st.lists(instructions(), min_size=1, max_size=8))
def test_images_round_trip_as_bin_and_hex(tmp_path_factory, program):
    words = [encode(i) for i in program]
    folder = tmp_path_factory.mktemp("img")
    (folder / "p.bin").write_bytes(to_bytes(words))
    (folder / "p.hex").write_text(to_hex(words))
    assert read_image(folder / "p.bin") == words == read_image(folder / "p.hex")
    assert assemble(disassemble(words), CONFIG, strict=False).words == words


def test_hex_is_most_significant_digit_first_and_bin_little_endian():
    word = encode(Instruction.make("halt"))
    assert to_hex([word]) == "0" * 127 + "6\n"
    assert to_bytes([word]) == bytes([6]) + bytes(63)


@pytest.mark.parametrize("word", ["-1", "+6", "0x6", "1_6", "6 7"])
def test_a_hex_image_holds_hex_digits_only(tmp_path, word):
    """Issue 41, item 10: Python's int() also reads a sign, a 0x prefix and underscores; a
    negative word escaped as an OverflowError (glc rtl) or disassembled to ``.word 0x-1``."""
    image = tmp_path / "p.hex"
    image.write_text(f"0000000000000006\n  {word}  // a comment\n")
    with pytest.raises(GlcError) as caught:
        read_image(image)
    assert str(caught.value) == (f"{image}:2:3: error: not a word of hexadecimal digits: "
                                 f"{word!r}")
    result = CliRunner().invoke(main, ["disasm", str(image)])
    assert result.exit_code == 1 and result.stderr.splitlines() == [str(caught.value)]
    assert ".word" not in result.stdout


def test_a_word_that_is_no_instruction_disassembles_to_a_word_directive():
    text = disassemble([8, 6 | 1 << 500])
    assert text.startswith(".word 0x8  ; ILLEGAL_OPCODE")
    assert "ILLEGAL_FIELD" in text.splitlines()[1]
    assert assemble(text, CONFIG).words == [8, 6 | 1 << 500]


def test_docs_list_the_error_codes_and_configuration_limits_of_the_code():
    text = DOC.read_text()
    codes = dict(re.findall(r"^\| (\d+) \| `(\w+)` \|", text, re.M))
    assert {int(k): v for k, v in codes.items()} == {c.value: c.name for c in ErrorCode}
    limits = re.findall(r"^\| `(\w+)` \| `[A-Z_]+` \| .* \| (\d+) … ([\d²³]+) \|$", text, re.M)
    powers = {"2³²": 1 << 32}
    assert {k: (int(lo), powers.get(hi) or int(hi)) for k, lo, hi in limits} == LIMITS
