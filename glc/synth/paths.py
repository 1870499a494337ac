"""The worst register-to-register paths of the synthesized core, by signal and source line.

After place-and-route, from what nextpnr wrote: its SDF (every cell and routing delay it timed
the design with) and its routed netlist (the net names and their ``src`` attributes). nextpnr's
own report names one critical path per clock; this walks the same timing graph the way its
analyser does (clock-to-out plus the launch clock's routing, then routing and cell delays,
against the capture clock's routing minus the setup time), so its worst path is nextpnr's
critical path and every endpoint's arrival nextpnr's (tests/synth/test_synth_paths.py).

Before placement (``glc synth --fast``), from Yosys's netlist: the same walk with each cell
counted as a logic level instead of timed (ECP5_LEVELS), a pre-placement estimate for
iterating in minutes where place-and-route takes an hour.

A path is reported once per (start bus, end bus): the worst path into each endpoint, grouped by
the buses it leaves and enters with their bit indices dropped, the worst of each group kept, so
the five paths are five places in the design rather than five bits of one bus.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from glc.errors import GlcError

# A pin: (cell name, port name).
Pin = tuple[str, str]
# How many paths a report lists.
WORST = 5


@dataclass
class TimingPath:
    """One register-to-register path: the signal it leaves (the start register's output net) and
    the one it ends in (the end flip-flop's output, or the hard block's cell and port), each with
    its source line; ``ns`` its delay with ``logic_ns`` (clock-to-out, cells, setup) and
    ``routing_ns`` (nets) its parts, None before placement; ``levels`` the logic cells it passes;
    ``blocks`` the hard blocks on it (block RAM, multiplier); ``units`` the module instances
    its nets belong to, in order (``_unit``); ``signals`` every net on it."""

    start: str
    end: str
    start_source: str
    end_source: str
    levels: int
    ns: float | None = None
    logic_ns: float | None = None
    routing_ns: float | None = None
    blocks: list[str] = field(default_factory=list)
    units: list[str] = field(default_factory=list)
    signals: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One line: delay (or levels), start → end, with their sources."""
        if self.ns is None:
            cost = f"{self.levels:3d} levels"
        else:
            cost = (f"{self.ns:6.2f} ns (logic {self.logic_ns:5.2f}, routing "
                    f"{self.routing_ns:5.2f}, {self.levels} levels)")
        blocks = f" via {', '.join(self.blocks)}" if self.blocks else ""
        return (f"{cost}  {self.start} ({self.start_source or '?'}) → {self.end} "
                f"({self.end_source or '?'}){blocks}; through {' → '.join(self.units)}")


@dataclass
class _Graph:
    """A timing graph: ``arcs`` from a pin to the pins it drives (routing) or feeds through its
    cell (logic), each with its cost; ``starts`` the clocked outputs with their launch cost;
    ``ends`` the clocked inputs with what their capture adds (setup less the capture clock's
    routing)."""

    arcs: dict[Pin, list[tuple[Pin, float, str]]] = field(default_factory=lambda: defaultdict(list))
    starts: dict[Pin, float] = field(default_factory=dict)
    ends: dict[Pin, float] = field(default_factory=dict)
    cell_types: dict[str, str] = field(default_factory=dict)

    def longest(self) -> tuple[dict[Pin, float], dict[Pin, tuple[Pin, float, str] | None]]:
        """Each reachable pin's latest arrival and the arc it came by, in topological order
        (Kahn's); pins on a combinational loop are left out, as nextpnr's --ignore-loops does."""
        indegree: dict[Pin, int] = defaultdict(int)
        for targets in self.arcs.values():
            for target, _, _ in targets:
                indegree[target] += 1
        arrival: dict[Pin, float] = dict(self.starts)
        came: dict[Pin, tuple[Pin, float, str] | None] = dict.fromkeys(self.starts)
        # In a fixed order: of paths as long, the first found is kept, the same one every run.
        ready = sorted(pin for pin in set(self.arcs) | set(self.starts) if indegree[pin] == 0)
        while ready:
            pin = ready.pop()
            here = arrival.get(pin)
            for target, cost, kind in self.arcs.get(pin, ()):
                if here is not None and (target not in arrival or here + cost > arrival[target]):
                    arrival[target] = here + cost
                    came[target] = (pin, cost, kind)
                indegree[target] -= 1
                if indegree[target] == 0:
                    ready.append(target)
        return arrival, came


_BIT = re.compile(r"\[\d+\]$")


def _bus(name: str) -> str:
    """A signal's name without its bit index."""
    return _BIT.sub("", name)


# A component of a flattened name that is a module instance (u_*) or a generate block (g_*),
# the RTL's naming (hw/*.sv).
_SCOPE = re.compile(r"([ug])_\w+(\[\d+\])?")


def _unit(name: str) -> str:
    """The module instance a flattened net name is in: its leading instances (``u_*``), through
    generate blocks, e.g. ``u_accumulator.u_mem`` for
    ``u_accumulator.g_one_bank.u_mem.live[1]``; ``accelerator`` for the top's own nets."""
    units = []
    for part in name.split("."):
        match = _SCOPE.fullmatch(part)
        if not match:
            break
        if match.group(1) == "u":
            units.append(_BIT.sub("", part))
    return ".".join(units) or "accelerator"


def _line(src: str) -> str:
    """The ``file:line`` of a Yosys ``src`` attribute (``a.sv:12.3-12.9|b.sv:4.1-4.2``): its
    first in the design's SystemVerilog, else its first (e.g. a Yosys techmap library's)."""
    entries = src.split("|")
    first = next((entry for entry in entries if ".sv:" in entry), entries[0])
    match = re.match(r"(.*?):(\d+)", first)
    return f"{Path(match.group(1)).name}:{match.group(2)}" if match else first


@dataclass
class _Names:
    """Net names of a Yosys-format netlist: each driving pin's net, and each net's source."""

    of_pin: dict[Pin, str]
    source: dict[str, str]
    # Each flip-flop's output net: the register a path ends in.
    register: dict[str, str]


def _read_names(module: dict) -> _Names:
    """The names of ``module`` (a Yosys or nextpnr JSON module): a bit's name is its shortest
    public alias (the highest in the hierarchy), else its shortest hidden one."""
    best: dict[int, tuple[int, int, str]] = {}
    source: dict[str, str] = {}
    for name, net in module.get("netnames", {}).items():
        bits, offset = net["bits"], int(net.get("offset", 0))
        src = _line(str(net.get("attributes", {}).get("src", "")))
        for index, bit in enumerate(bits):
            alias = name if len(bits) == 1 else f"{name}[{index + offset}]"
            key = (net.get("hide_name", 0), len(alias), alias)
            if isinstance(bit, int) and (bit not in best or key < best[bit]):
                best[bit] = key
            source[alias] = src
    of_pin, register = {}, {}
    for cell_name, cell in module["cells"].items():
        for port, bits in cell["connections"].items():
            if cell.get("port_directions", {}).get(port) != "output":
                continue
            for index, bit in enumerate(bits):
                if isinstance(bit, int) and bit in best:
                    pin = (cell_name, port if len(bits) == 1 else f"{port}[{index}]")
                    of_pin[pin] = best[bit][2]
                    if cell["type"] == "TRELLIS_FF" and port == "Q":
                        register[cell_name] = best[bit][2]
    return _Names(of_pin, source, register)


def _top_module(netlist: dict, where: str) -> dict:
    """The netlist's top module (the one marked ``top``, else its only one)."""
    modules = netlist.get("modules", {}) if isinstance(netlist, dict) else {}
    tops = [m for m in modules.values() if str(m.get("attributes", {}).get("top", "0")) in
            ("1", "00000000000000000000000000000001")] or list(modules.values())[:1]
    if not tops:
        raise GlcError("the netlist holds no module", where)
    return tops[0]


# Hard blocks worth naming on a path.
BLOCKS = ("DP16KD", "MULT18X18D", "TRELLIS_DPR16X4")


def _paths(graph: _Graph, names: _Names, timed: bool, count: int) -> list[TimingPath]:
    """The ``count`` worst paths of ``graph``, one per (start bus, end bus)."""
    arrival, came = graph.longest()
    worst: dict[tuple[str, str], tuple[float, Pin]] = {}
    for pin, capture in graph.ends.items():
        if pin not in arrival:
            continue
        total = arrival[pin] + capture
        start, end = _start_pin(pin, came), pin
        key = (_bus(_start_name(start, names)), _bus(_end_name(end, names)))
        if key not in worst or total > worst[key][0]:
            worst[key] = (total, pin)
    ranked = sorted(worst.values(), key=lambda item: -item[0])[:count]
    return [_trace(pin, total, graph, names, came, timed) for total, pin in ranked]


def _start_pin(pin: Pin, came: dict) -> Pin:
    """Where the path into ``pin`` starts."""
    while came.get(pin) is not None:
        pin = came[pin][0]
    return pin


def _start_name(pin: Pin, names: _Names) -> str:
    return names.of_pin.get(pin, f"{pin[0]}.{pin[1]}")


def _end_name(pin: Pin, names: _Names) -> str:
    return names.register.get(pin[0], f"{pin[0]}.{pin[1]}")


# nextpnr's carry ripple between packed CCU2C halves: no logic level.
CARRY = ("FCI", "FCO")


def _trace(end: Pin, total: float, graph: _Graph, names: _Names, came: dict,
           timed: bool) -> TimingPath:
    """The path into ``end``, walked back along the arcs it came by."""
    logic = routing = 0.0
    levels = 0
    signals, blocks = [], []
    pin = end
    while came.get(pin) is not None:
        previous, cost, kind = came[pin]
        if kind == "routing":
            routing += cost
            signals.append(names.of_pin.get(previous, f"{previous[0]}.{previous[1]}"))
        else:
            logic += cost
            levels += round(cost) if not timed else int((previous[1], pin[1]) != CARRY)
        pin = previous
        if graph.cell_types.get(pin[0]) in BLOCKS:
            blocks.append(graph.cell_types[pin[0]])
    arriving = names.of_pin.get(came[end][0], "") if came.get(end) else ""
    start, end_name = _start_name(pin, names), _end_name(end, names)
    path = TimingPath(start=start, end=end_name, start_source=names.source.get(start, ""),
                      end_source=names.source.get(end_name) or names.source.get(arriving, ""),
                      levels=levels, blocks=list(dict.fromkeys(reversed(blocks))),
                      units=list(dict.fromkeys(map(_unit, [start, *signals[::-1], end_name]))),
                      signals=signals[::-1])
    if timed:
        path.ns = round(total / 1000, 3)
        path.logic_ns = round((logic + graph.starts[pin] + graph.ends[end]) / 1000, 3)
        path.routing_ns = round(routing / 1000, 3)
    else:
        path.levels += round(graph.starts[pin] + graph.ends[end])
    return path


# One SDF statement per line, as nextpnr writes them (common/kernel/sdf.cc).
_CELLTYPE = re.compile(r'\s*\(CELLTYPE "(.*)"\)')
_INSTANCE = re.compile(r"\s*\(INSTANCE (\S*)\)")
_INTERCONNECT = re.compile(r"\s*\(INTERCONNECT (\S+) (\S+) \(([^)]*)\) \(([^)]*)\)\)")
_IOPATH = re.compile(r"\s*\(IOPATH (\S+) (\S+) \(([^)]*)\) \(([^)]*)\)\)")
_SETUPHOLD = re.compile(r"\s*\(SETUPHOLD \(\w+ (\S+)\) \(\w+ (\S+)\) \(([^)]*)\) \(([^)]*)\)\)")
_ESCAPE = re.compile(r"\\(.)")


def _name(escaped: str) -> str:
    return _ESCAPE.sub(r"\1", escaped)


def _pin(escaped: str) -> Pin:
    """``cell/port`` as written (the divider after the last unescaped ``/``)."""
    cell, _, port = _name(escaped).rpartition("/")
    return cell, port


def _max(triple: str) -> float:
    """The max of an SDF ``min:typ:max`` (picoseconds)."""
    return float(triple.rsplit(":", 1)[-1])


def read_sdf(text: str, where: str = "sdf") -> _Graph:
    """nextpnr's SDF as a timing graph in picoseconds: its INTERCONNECTs are routing arcs, an
    IOPATH from a cell's clock (a port its SETUPHOLD checks are clocked by, in any cell of its
    type) a start (clock-to-out plus the clock pin's routing), any other IOPATH a logic arc,
    and a SETUPHOLD an end (its setup less the clock pin's routing). Each delay is the larger
    of rise and fall, as nextpnr's analyser takes."""
    graph = _Graph()
    routing: dict[Pin, float] = {}
    iopaths: list[tuple[str, str, str, float]] = []
    checks: list[tuple[str, str, str, float]] = []
    clocks: set[tuple[str, str]] = set()
    cell = celltype = None
    for line in text.splitlines():
        if match := _INTERCONNECT.match(line):
            source, sink = _pin(match.group(1)), _pin(match.group(2))
            delay = max(_max(match.group(3)), _max(match.group(4)))
            graph.arcs[source].append((sink, delay, "routing"))
            routing[sink] = delay
        elif match := _IOPATH.match(line):
            iopaths.append((cell, _name(match.group(1)), _name(match.group(2)),
                            max(_max(match.group(3)), _max(match.group(4)))))
        elif match := _SETUPHOLD.match(line):
            clock = _name(match.group(2))
            checks.append((cell, _name(match.group(1)), clock, _max(match.group(3))))
            clocks.add((celltype, clock))
        elif match := _CELLTYPE.match(line):
            celltype = match.group(1)
        elif match := _INSTANCE.match(line):
            cell = _name(match.group(1))
            graph.cell_types[cell] = celltype
    if not routing:
        raise GlcError("no INTERCONNECT in nextpnr's SDF: not a routed design", where)
    for cell, source, sink, delay in iopaths:
        if (graph.cell_types[cell], source) in clocks:
            launch = delay + routing.get((cell, source), 0.0)
            graph.starts[(cell, sink)] = max(launch, graph.starts.get((cell, sink), launch))
        else:
            graph.arcs[(cell, source)].append(((cell, sink), delay, "logic"))
    for cell, port, clock, setup in checks:
        # Rising and falling data edges are checked alike: one end.
        graph.ends[(cell, port)] = setup - routing.get((cell, clock), 0.0)
    return graph


def routed_paths(sdf: Path, routed: Path, count: int = WORST) -> list[TimingPath]:
    """The ``count`` worst paths of a routed design: nextpnr's SDF and its routed netlist
    (``--sdf``, ``--write``)."""
    for path in (sdf, routed):
        if not path.exists():
            raise GlcError("nextpnr wrote no timing data for the worst paths", str(path))
    graph = read_sdf(sdf.read_text(), str(sdf))
    names = _read_names(_top_module(json.loads(routed.read_text()), str(routed)))
    return _paths(graph, names, True, count)


# Logic levels of the ECP5 cells Yosys's synth_ecp5 writes, before placement: for each cell
# type, its clock ports (inputs captured by them are ends, outputs launched by them starts),
# and its combinational arcs (input prefix, output prefix, levels). The carry-in of a CCU2C
# ripples through the fast carry chain, no level; a block RAM read without its output register
# (REGMODE NOREG) is the array's read in the path, a level at the start.
ECP5_LEVELS = {
    "TRELLIS_FF": (("CLK",), ()),
    "LUT4": ((), (("[ABCD]", "Z", 1),)),
    "PFUMX": ((), (("ALUT|BLUT|C0", "Z", 1),)),
    "L6MUX21": ((), (("D0|D1|SD", "Z", 1),)),
    "CCU2C": ((), (("[ABCD][01]", "S[01]|COUT", 1), ("CIN", "S[01]", 1), ("CIN", "COUT", 0))),
    "DP16KD": (("CLKA", "CLKB"), ()),
    "TRELLIS_DPR16X4": (("WCK",), (("RAD", "DO", 1),)),
    "MULT18X18D": (("CLK0", "CLK1", "CLK2", "CLK3"), (("A\\d+|B\\d+", "P\\d+", 1),)),
    # Yosys's record of a flattened module instance: no logic, no ports.
    "$scopeinfo": ((), ()),
}


def netlist_paths(netlist: Path, count: int = WORST) -> list[TimingPath]:
    """The ``count`` deepest register-to-register paths of Yosys's ECP5 netlist (synth_ecp5
    -json), in logic levels (ECP5_LEVELS). A cell of a type it does not know is an error: a
    cell taken for a wire would hide the levels behind it."""
    if not netlist.exists():
        raise GlcError("Yosys wrote no netlist", str(netlist))
    module = _top_module(json.loads(netlist.read_text()), str(netlist))
    unknown = sorted({cell["type"] for cell in module["cells"].values()
                      if cell["type"] not in ECP5_LEVELS})
    if unknown:
        raise GlcError(f"cannot time Yosys's cells {', '.join(unknown)}: not ECP5 cells "
                       "glc knows the levels of", str(netlist))
    graph = _Graph()
    drivers: dict[int, Pin] = {}
    sinks: dict[int, list[Pin]] = defaultdict(list)
    for cell_name, cell in module["cells"].items():
        kind, params = cell["type"], cell.get("parameters", {})
        clocks, combinational = ECP5_LEVELS[kind]
        graph.cell_types[cell_name] = kind
        inputs, outputs = [], []
        for port, bits in cell["connections"].items():
            if port in clocks:
                continue
            output = cell.get("port_directions", {}).get(port) == "output"
            for index, bit in enumerate(bits):
                if not isinstance(bit, int):  # a constant
                    continue
                pin = (cell_name, port if len(bits) == 1 else f"{port}[{index}]")
                (outputs if output else inputs).append(pin)
                if output:
                    drivers[bit] = pin
                else:
                    sinks[bit].append(pin)
        for pin in inputs:
            if clocks and _registered(kind, pin[1], params):
                graph.ends[pin] = 0
                continue
            graph.arcs[pin].extend(
                (target, levels, "logic") for into, out, levels in combinational
                if re.fullmatch(into, _port(pin)) for target in outputs
                if re.fullmatch(out, _port(target))
                and not (clocks and _registered(kind, target[1], params)))
        for pin in outputs:
            if clocks and _registered(kind, pin[1], params):
                graph.starts[pin] = 1 if kind == "DP16KD" and _noreg(pin, params) else 0
    for bit, pin in drivers.items():
        graph.arcs[pin].extend((sink, 0, "routing") for sink in sinks.get(bit, ()))
    return _paths(graph, _read_names(module), False, count)


def _port(pin: Pin) -> str:
    """The cell port of ``pin`` (``DO`` of ``DO[2]``)."""
    return _BIT.sub("", pin[1])


def _registered(cell_type: str, port: str, params: dict) -> bool:
    """Whether ``port`` of a clocked cell is captured or launched by its clock: a
    MULT18X18D's by its REG_*_CLK parameters (Yosys maps $mul with none), a DPR16X4's unless
    it is its asynchronous read (RAD in, DO out), every other port of the others."""
    if cell_type == "MULT18X18D":
        register = {"A": "REG_INPUTA_CLK", "B": "REG_INPUTB_CLK", "P": "REG_OUTPUT_CLK"}
        name = register.get(port[0])
        return name is None or str(params.get(name, "NONE")).strip() != "NONE"
    if cell_type == "TRELLIS_DPR16X4":
        return not port.startswith(("RAD", "DO"))
    return True


def _noreg(pin: Pin, params: dict) -> bool:
    """A DP16KD output without its output register (the REGMODE of its port)."""
    side = "B" if pin[1].startswith("DOB") else "A"
    return str(params.get(f"REGMODE_{side}", "NOREG")).strip() == "NOREG"


def format_paths(paths: list[TimingPath], title: str) -> list[str]:
    """The report's lines for ``paths``, numbered, under ``title``."""
    return [f"  {title}:"] + [f"    {i}. {path.describe()}" for i, path in enumerate(paths, 1)]
