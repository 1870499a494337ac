"""The assembler's syntax and located errors, and the `glc asm` / `glc disasm` commands."""

import json

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from glc.errors import GlcError
from glc.hwconfig import load_config
from glc.isa.asm import assemble
from glc.isa.commands import COMMANDS, asm, disasm
from glc.isa.encoding import Instruction, decode, encode, read_image

N4 = load_config("n4")


def test_symbols_expressions_flags_and_names():
    program = assemble(""".equ BASE, 0x40
    ; a comment line
    load acc, row=2, dram=BASE + 3*N, run=N/2, count0=(1 << 3) | 1, stride0=-4, push_next
    sync unit=store, pop_prev   ; trailing comment
    halt""", N4)
    assert program.symbols["BASE"] == 64
    first, second, third = program.instructions()
    assert first == Instruction.make("load", acc=1, row=2, dram=76, run=2, count0=9,
                                     stride0=-4, push_next=1)
    assert second == Instruction.make("sync", unit=2, pop_prev=1)
    assert third.op.name == "halt"
    assert [s.line for s in program.spans] == [3, 4, 5]


def test_a_negative_dram_base_wraps_modulo_2_to_the_32():
    (load, _) = assemble("load run=1, dram=-3\nhalt", N4).instructions()
    assert load["dram"] == (1 << 32) - 3


@pytest.mark.parametrize(("text", "col", "message"), [
    ("lod row=0", 1, "unknown mnemonic 'lod'"),
    ("load run=1, colour=3", 13, "load has no field 'colour'"),
    ("load run=1, row=70000", 17, "row=70000 does not fit its 16-bit field"),
    ("load run=1, row=X + 1", 17, "undefined symbol X"),
    ("load run=1, relu", 13, "load has no field 'relu'"),
    ("matmul acc", 8, "acc needs a value"),
    ("load run=1, row=1, row=2", 20, "field row given twice"),
    ("load run=1, count0=0", 1, "illegal load: count0 is 0"),
    ("load run=N+1", 1, "illegal load: run=5 outside 1 … N=4"),
    ("load run=1, row=2 ** 3", 17, "not allowed in an expression"),
    (".equ N, 3", 1, "symbol N is already defined"),
    ("load run=1,, row=2", 12, "empty operand"),
    ("load run=1, row=1 << 1000000000", 17, "shift by 1000000000 outside 0 … 512"),
])
def test_errors_point_at_line_and_column(text, col, message):
    with pytest.raises(GlcError) as caught:
        assemble("; first line\n" + text, N4, "p.s")
    assert caught.value.message.startswith(message)
    assert (caught.value.where.line, caught.value.where.col) == (2, col)
    assert str(caught.value).startswith(f"p.s:2:{col}: error: ")


def test_asm_writes_bin_and_hex_and_disasm_reads_them_back(tmp_path):
    source = tmp_path / "p.s"
    source.write_text("load row=1, run=N, count0=2, stride0=N, push_next\n"
                      "preload row=1, pop_prev\nhalt\n")
    runner = CliRunner()
    for suffix in (".bin", ".hex"):
        out = tmp_path / f"p{suffix}"
        result = runner.invoke(asm, [str(source), "-o", str(out), "--config", "n4"])
        assert result.exit_code == 0, result.output
        words = read_image(out)
        assert [decode(w).op.name for w in words] == ["load", "preload", "halt"]
        listing = runner.invoke(disasm, [str(out)])
        assert listing.exit_code == 0
        assert assemble(listing.output, N4).words == words
    assert [asm, disasm] == COMMANDS


def test_asm_stats_prints_the_per_unit_breakdown(tmp_path):
    source = tmp_path / "p.s"
    source.write_text("preload row=0\nmatmul rows=12\npreload row=0\nmatmul rows=12\nhalt\n")
    result = CliRunner().invoke(asm, [str(source), "--stats", "--config", "n4"])
    assert result.exit_code == 0, result.output
    # cycles as worked out in test_isa_cycles: second matmul at 15, + 12 rows + 2N - 1
    assert "cycles                 34" in result.output
    assert "busy exec              24" in result.output
    for label in ("busy load", "busy store", "busy vector", "stall token", "stall dram", "macs"):
        assert label in result.output


def test_asm_json_prints_one_object_with_the_figures(tmp_path):
    source = tmp_path / "p.s"
    source.write_text("preload row=0\nmatmul rows=12\npreload row=0\nmatmul rows=12\nhalt\n")
    result = CliRunner().invoke(asm, [str(source), "--json", "--config", "n4"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert (figures["instructions"], figures["predicted_cycles"], figures["macs"]) == (5, 34, 384)


def test_asm_stats_of_a_program_with_an_illegal_word_is_a_located_error(tmp_path):
    source = tmp_path / "p.s"
    source.write_text("sync unit=load\n.word 8\nhalt\n")
    result = CliRunner().invoke(asm, [str(source), "--stats", "--config", "n4"])
    assert isinstance(result.exception, GlcError)
    assert str(result.exception).startswith(f"{source}:2:1: error: ILLEGAL_OPCODE at instruction 1")


def test_asm_errors_are_glc_errors_with_the_location(tmp_path):
    source = tmp_path / "bad.s"
    source.write_text("halt\nload run=99\n")
    result = CliRunner().invoke(asm, [str(source), "-o", str(tmp_path / "x.bin")])
    assert isinstance(result.exception, GlcError)
    assert str(result.exception).startswith(f"{source}:2:1: error: illegal load")
    with pytest.raises(GlcError, match="must end in .bin or .hex"):
        asm.main([str(tmp_path / "bad.s"), "-o", str(tmp_path / "x.txt")], standalone_mode=False)


def test_disasm_of_a_truncated_image_is_an_error(tmp_path):
    image = tmp_path / "p.bin"
    image.write_bytes(encode(Instruction.make("halt")).to_bytes(64, "little")[:20])
    result = CliRunner().invoke(disasm, [str(image)])
    assert isinstance(result.exception, GlcError)
    assert "whole number of 64-byte words" in str(result.exception)


_PIECES = ["load", "store", "matmul", "preload", "sync", "halt", ".equ", ".word", "acc", "raw",
           "row", "=", ",", " ", "N", "1", "-", "0x1f", "(", ")", "*", "/", "%", "<<", "unit",
           "exec", "count0", "stride1", ";", "\n", "\t", "é", "[", "'", "lambda", "x", "**",
           "9" * 12, "A", "{", "."]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30))
def test_any_text_assembles_or_fails_with_a_located_glc_error(pieces):
    try:
        assemble("".join(pieces), N4, "f.s")
    except GlcError as error:
        assert str(error).startswith("f.s")
