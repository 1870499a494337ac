"""hw/isa_pkg.sv, the RTL's copy of the instruction layout, is generated from glc/isa/fields.py
and up to date."""

from glc.sim.isa_pkg import PACKAGE, render


def test_rtl_package_is_generated_from_the_field_table():
    assert PACKAGE.read_text() == render(), "run: python -m glc.sim.isa_pkg"
