"""Section ``egraph``: saturation and exact extraction, on the programs and on product chains.

Programs: every ``programs/`` kernel with the default rule sets (``im2col,tensorise`` for a
16 x 16 array). Chains: ``x . W1 . W2 ... WN`` for 32 x 32 int8 matrices, each product written
with Glenside's matmul idiom ``(compute dot-product (access-cartesian-product (access P 1)
(access (access-transpose W (list 1 0)) 1)))``, rewritten by one tensorising row per array
shape rows x cols with rows and cols dividing 32 (36 rows: the design space of array shapes)
and the ``cleanup`` rule set; 200 products make about 9k e-nodes. ``chain+swap`` adds the
``orientation`` set (each product may also be computed with its operands swapped and the result
transposed), which doubles the e-graph and makes each product's two orientations alternatives
of each other. Extraction uses the compiler's cost (glc/rewrites/cost.py: 1 per e-node, an
un-tensorised dot-product prohibitive); greedy minimises tree cost, exact the DAG cost (HiGHS,
at most EXTRACT_LIMIT seconds; ``optimal`` says whether it proved its answer). Times are wall
seconds; saturation excludes adding the term.
"""

from __future__ import annotations

from pathlib import Path

from glc.egraph.egraph import EGraph
from glc.egraph.extract import exact, greedy
from glc.egraph.rewrite import Match, rewrite
from glc.egraph.runner import Runner
from glc.inputs import load
from glc.ir.term import Term, leaf
from glc.ir.types import Access
from glc.rewrites import DEFAULT, select
from glc.rewrites.cost import tensorised

SECTION = "egraph"
TITLE = "e-graph: saturation and exact extraction"
PROGRAMS = Path(__file__).resolve().parents[2] / "programs"
DIM = 32
CHAINS = (10, 50, 200)
SWAP_CHAINS = (10, 50, 200)
EXTRACT_LIMIT = 10.0


def chain(n: int, dim: int = DIM) -> tuple[Term, dict[str, Access]]:
    """x . W1 ... Wn with Glenside's matmul idiom, and the input types."""
    env = {"x": Access((dim, dim), (), "int8")}
    one = leaf("int", 1)
    flip = Term("list", (leaf("int", 1), leaf("int", 0)))
    product = Term("access-tensor", (leaf("symbol", "x"),))
    for i in range(1, n + 1):
        env[f"w{i}"] = Access((dim, dim), (), "int8")
        weights = Term("access-transpose", (Term("access-tensor", (leaf("symbol", f"w{i}"),)),
                                            flip))
        pair = Term("access-cartesian-product", (Term("access", (product, one)),
                                                 Term("access", (weights, one))))
        product = Term("compute", (leaf("compute-type", ("dot-product",)), pair))
    return product, env


def tiling_rules(dim: int = DIM) -> list:
    """One tensorising row per array shape rows x cols dividing the product's dims."""
    sizes = [k for k in range(1, dim + 1) if dim % k == 0]

    def fits(rows: int, cols: int):
        def condition(m: Match) -> bool:
            a, b = m.types["a"], m.types["b"]
            return (isinstance(a, Access) and isinstance(b, Access) and len(a.shape) <= 1
                    and len(b.shape) == 1 and a.item == b.item and len(a.item) == 1
                    and a.item[0] % rows == 0 and b.shape[0] % cols == 0)

        return condition

    return [rewrite(f"tile-{r}x{c}", "(compute dot-product (access-cartesian-product ?a ?b))",
                    f"(systolic-array-with-blocking {r} {c} ?a "
                    "(access (access-transpose ?b (list 1 0)) 0))", condition=fits(r, c))
            for r in sizes for c in sizes]


def measure(case: str, term: Term, env: dict, rules) -> dict:
    """Saturate, then extract greedily and exactly; one row of figures."""
    eg = EGraph(env)
    root = eg.add_term(term)
    report = Runner(rules).run(eg)
    tree = greedy(eg, root, tensorised)
    best = exact(eg, root, tensorised, time_limit=EXTRACT_LIMIT)
    return {"case": case, "enodes": report.enodes, "eclasses": report.eclasses,
            "iterations": len(report.iterations), "stop": report.stop_reason,
            "saturate_s": report.seconds, "greedy_cost": tree.dag_cost,
            "greedy_s": tree.seconds, "exact_cost": best.dag_cost, "optimal": best.optimal,
            "exact_s": best.seconds}


def run() -> list[dict]:
    rows = []
    for folder in sorted(p for p in PROGRAMS.iterdir() if p.is_dir()):
        bundle = load(folder)
        rows.append(measure(folder.name, bundle.program.body, bundle.env, select(DEFAULT, 16)))
    rules = tiling_rules() + select("cleanup", DIM)
    for n in CHAINS:
        rows.append(measure(f"chain {n}", *chain(n), rules))
    swapping = rules + select("orientation", DIM)
    for n in SWAP_CHAINS:
        rows.append(measure(f"chain+swap {n}", *chain(n), swapping))
    return rows
