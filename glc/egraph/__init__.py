"""An egg-style e-graph for Glenside terms (Willsey et al., "egg", POPL 2021).

The modules follow the algorithm's nouns: ``unionfind`` (class ids), ``egraph`` (hash-consed
e-nodes, deferred rebuild), ``analysis`` (each class's type by the shape rules, and its zero
boxes), ``rewrite`` (a rule as data), ``pattern`` (e-matching and instantiation), ``runner``
(equality saturation within limits, backoff, the report), ``extract`` (greedy tree-cost and exact
DAG-cost extraction) and ``dot`` (the picture). The interface the compiler uses is small:
``EGraph(env)``, ``add_term``, ``union``, ``rebuild``, ``find``, ``data``/``type_of``,
``Runner(rules, limits).run(egraph)``, and ``greedy``/``exact(egraph, root, cost)``.
"""
