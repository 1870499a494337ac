"""``python -m glc``: the same as the ``glc`` command."""

from glc.cli import main

main()
