"""The disassembler and assembler under random words: every image disassembles to text that
assembles back to the same words (an illegal word or field as a `.word` line saying why), and
random assembly text either assembles or fails in one located line."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from glc.cli import main
from glc.errors import GlcError
from glc.hwconfig import load_config
from glc.isa.asm import assemble, disassemble
from glc.isa.encoding import encode, to_bytes
from glc.isa.fields import OPCODES, WORD_BITS, Field

CONFIGS = [load_config("n16"), load_config("n4")]


@st.composite
def instruction_words(draw) -> int:
    """A word of a real opcode with every field drawn over its whole width (legal or not)."""
    op = draw(st.sampled_from(OPCODES))
    word = op.code
    for f in op.fields:
        word |= draw(field_values(f)) << f.lsb
    return word


def field_values(f: Field):
    top = (1 << f.width) - 1
    return st.one_of(st.just(0), st.just(1), st.just(top), st.integers(0, top))


words = st.one_of(instruction_words(), st.integers(0, (1 << WORD_BITS) - 1))


@settings(max_examples=200, deadline=None)
@given(st.lists(words, min_size=1, max_size=8), st.sampled_from(CONFIGS))
def test_disassembled_words_assemble_back_to_the_same_words(image, config):
    text = disassemble(image, config.array_size)
    assert assemble(text, config, "fuzz.s").words == image


def test_an_illegal_field_disassembles_to_a_word_line_that_reassembles(tmp_path):
    """Item 20: `load count0=0` decodes, but no array can run it; it used to disassemble to a
    load that `glc asm` refused."""
    n16 = CONFIGS[0]
    word = encode(assemble("load row=0, count0=1, run=1\n", n16).instructions()[0]) \
        & ~(((1 << 16) - 1) << _lsb("load", "count0"))
    image = tmp_path / "bad.bin"
    image.write_bytes(to_bytes([word]))
    shown = CliRunner().invoke(main, ["disasm", str(image)])
    assert shown.exit_code == 0
    assert shown.stdout.startswith(".word 0x") and "ILLEGAL_FIELD: load: count0 is 0" in \
        shown.stdout
    source = tmp_path / "bad.s"
    source.write_text(shown.stdout)
    back = tmp_path / "back.bin"
    assert CliRunner().invoke(main, ["asm", str(source), "-o", str(back)]).exit_code == 0
    assert back.read_bytes() == image.read_bytes()


def _lsb(op_name: str, field: str) -> int:
    (op,) = [op for op in OPCODES if op.name == op_name]
    (f,) = [f for f in op.fields if f.name == field]
    return f.lsb


MNEMONICS = [op.name for op in OPCODES] + [".equ", ".word", "nop"]
FIELDS = sorted({f.name for op in OPCODES for f in op.fields})
LINE = re.compile(r"^fuzz\.s(:\d+:\d+)?: error: [^\n]+$")


@st.composite
def assembly_lines(draw) -> str:
    mnemonic = draw(st.sampled_from(MNEMONICS))
    parts = []
    for _ in range(draw(st.integers(0, 4))):
        name = draw(st.sampled_from(FIELDS + ["A", "x"]))
        value = draw(st.one_of(st.integers(-5, 1 << 40).map(str),
                               st.sampled_from(["", "N", "1+", "(2", "1/0", "2**3", "A*2"]),
                               st.text(max_size=4)))
        parts.append(draw(st.sampled_from([f"{name}={value}", name, value])))
    return f"{mnemonic} {', '.join(parts)}"


@settings(max_examples=200, deadline=None)
@given(st.lists(assembly_lines(), min_size=1, max_size=4))
def test_random_assembly_assembles_or_fails_in_one_located_line(lines):
    try:
        assemble("\n".join(lines) + "\n", CONFIGS[1], "fuzz.s")
    except GlcError as error:
        assert LINE.match(str(error)), str(error)


@pytest.mark.parametrize("config", ["n16", "n4"])
def test_disasm_of_the_same_config_round_trips_through_the_cli(tmp_path, config):
    n = load_config(config).array_size
    # run=16 is legal on n16 only: on n4 it becomes a .word line.
    word = encode(assemble(f"load row=0, count0=1, run={min(16, n)}\n",
                           load_config(config)).instructions()[0])
    wide = encode(assemble("load row=0, count0=1, run=16\n", CONFIGS[0]).instructions()[0])
    image = tmp_path / "p.bin"
    image.write_bytes(to_bytes([word, wide]))
    shown = CliRunner().invoke(main, ["disasm", str(image), "--config", config])
    assert shown.exit_code == 0
    assert (".word" in shown.stdout) == (n < 16)
    (tmp_path / "p.s").write_text(shown.stdout)
    back = tmp_path / "back.bin"
    result = CliRunner().invoke(main, ["asm", str(tmp_path / "p.s"), "-o", str(back),
                                       "--config", config])
    assert result.exit_code == 0, result.output
    assert back.read_bytes() == image.read_bytes()
