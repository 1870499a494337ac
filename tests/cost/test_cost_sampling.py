"""The sampled runs' arithmetic (glc/cost/sampling.py, glc/cost/tiles.py ``_period``): the
period found in a dim's kinds with the kinds at its ends apart, and runs whose weighted sum
is the whole dim's wherever each tile adds what its kind adds."""

from __future__ import annotations

import pytest

from glc.cost.sampling import _periodic_runs
from glc.cost.tiles import _period


@pytest.mark.parametrize("kinds,edges", [
    ("aaaaaaaa", (0, 1, 0)),
    ("abcabcabcab", (0, 3, 0)),
    ("xaaaaaaaaaa", (1, 1, 0)),  # a padded image's first row of pixels
    ("xyaaaaaaaaaz", (2, 1, 1)),  # two rows padded at the top, one at the bottom
    ("xabababababy", (1, 2, 1)),
])
def test_the_period_is_found_with_the_kinds_at_either_end_apart(kinds, edges):
    assert _period(list(kinds)) == edges


@pytest.mark.parametrize("kinds", ["xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaz",
                                   "xyabcabcabcabcabcabcabcabcabcabcabcabczw",
                                   "abababababababababababababababab"])
@pytest.mark.parametrize("a,b", [(2, 3), (12, 18)])
def test_runs_add_up_to_the_whole_dim_where_each_tile_adds_its_kinds_cost(kinds, a, b):
    """Each kind a cost, a run's cost the sum over its tiles (the last tile always in it):
    the runs' weighted sum is the whole dim's, border kinds included, for the edges found
    from tile a − 1 on (as extrapolated asks)."""
    cost = {kind: 10 + 7 * i for i, kind in enumerate(sorted(set(kinds)))}
    edges = _period(list(kinds[a - 1:-1]))
    runs = _periodic_runs(len(kinds), a, b, edges)
    total = sum(weight * sum(cost[kinds[i]] for i in tiles) for weight, tiles in runs)
    assert total == pytest.approx(sum(cost[k] for k in kinds))
    assert all(tiles[-1] == len(kinds) - 1 for _, tiles in runs)
