"""Cost models, above the e-graph and the lowering (issue 10): ``extraction`` (the cost the
e-graph's extraction minimises: a candidate's predicted cycles), ``kernel`` and ``pipeline`` (the
analytic model of one kernel at tile granularity the lowering's schedule search uses), ``limit``
(the compute ideal and the roofline limit every figure is measured against)."""
