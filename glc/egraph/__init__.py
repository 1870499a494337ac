"""An egg-style e-graph for Glenside terms: hash-consing, analysis, runner, extraction."""
