"""The hardware configuration: one TOML file per accelerator in hw/configs/ (glc and the RTL).

Every key is documented in docs/isa.md ("Hardware configuration"); the RTL build maps each key to
the Verilog parameter of the same name in UPPER_SNAKE case.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from glc.errors import GlcError, read_text

CONFIG_DIR = Path(__file__).resolve().parent.parent / "hw" / "configs"

# Legal range of each key, inclusive (docs/isa.md): the upper bounds come from the ISA's field
# widths (16-bit row fields, 32-bit DRAM addresses, 8-bit `run`, 64-byte instruction words).
LIMITS = {
    "array_size": (2, 128),
    "scratchpad_rows": (1, 1 << 16),
    "accumulator_rows": (1, 1 << 16),
    "dram_bytes": (1, 1 << 32),
    "dram_port_bytes": (1, 256),
    "fetch_buffer_words": (1, 1 << 16),
    "fetch_port_bytes": (1, 64),
    "queue_depth": (1, 256),
    "vector_lanes": (1, 128),
    "vector_shares_ports": (0, 1),
    "column_split": (0, 1),
}


@dataclass(frozen=True)
class HwConfig:
    """One accelerator: the array size N, memory sizes, DRAM and fetch ports, queue depth,
    the vector unit's lanes and accumulator ports."""

    array_size: int
    scratchpad_rows: int
    accumulator_rows: int
    dram_bytes: int
    dram_port_bytes: int
    fetch_buffer_words: int
    fetch_port_bytes: int
    queue_depth: int
    vector_lanes: int  # L: lanes the vector unit computes a cycle, dividing N
    # 1: the vector unit reaches the accumulator through the LOAD unit's write port and the
    # STORE unit's read port, taking turns with them (docs/isa.md, "Accumulator ports")
    vector_shares_ports: int
    # 1: MATMUL may split the array at row N/2, each half summing its own N columns into its
    # own accumulator rows (docs/isa.md, MATMUL `split`)
    column_split: int
    name: str = "custom"

    def verilog_parameters(self) -> dict[str, int]:
        """The RTL build's parameters: each key in UPPER_SNAKE case."""
        return {key.upper(): getattr(self, key) for key in LIMITS}

    @property
    def vector_passes(self) -> int:
        """N / L: the cycles the vector unit takes over one source row (docs/isa.md, VECTOR
        timing)."""
        return self.array_size // self.vector_lanes


def load_config(name_or_path: str | Path) -> HwConfig:
    """Read a configuration: a name such as "n16" (hw/configs/n16.toml) or a path to a TOML file."""
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = CONFIG_DIR / f"{name_or_path}.toml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in CONFIG_DIR.glob("*.toml")))
        raise GlcError(f"no hardware configuration {name_or_path!r} (known: {known})", str(path))
    try:
        data = tomllib.loads(read_text(path, "configuration"))
    except tomllib.TOMLDecodeError as error:
        raise GlcError(f"not valid TOML: {error}", str(path)) from error
    return config_from_dict(data, str(path), path.stem)


def config_from_dict(data: dict, where: str, name: str = "custom") -> HwConfig:
    """Check the keys and values of a configuration table; errors name `where`."""
    declared = {f.name for f in fields(HwConfig)} - {"name"}
    unknown = sorted(set(data) - declared)
    if unknown:
        raise GlcError(f"unknown configuration key(s) {', '.join(unknown)}", where)
    missing = sorted(declared - set(data))
    if missing:
        raise GlcError(f"missing configuration key(s) {', '.join(missing)}", where)
    for key, (low, high) in LIMITS.items():
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise GlcError(f"{key} must be an integer in {low} … {high}, not {value!r}", where)
    if data["array_size"] % data["vector_lanes"]:
        raise GlcError(f"vector_lanes must divide array_size ({data['array_size']}), not "
                       f"{data['vector_lanes']}", where)
    if data["column_split"] and (data["array_size"] % 2 or data["accumulator_rows"] % 2):
        raise GlcError("column_split needs an even array_size and accumulator_rows (the halves "
                       "of the array, the accumulator's banks of even and odd rows)", where)
    return HwConfig(name=name, **{key: data[key] for key in LIMITS})
