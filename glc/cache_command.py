"""``glc cache info`` and ``glc cache clear``: the compile and schedule cache (glc/cache.py;
the CLI adds the group; errors become exit statuses there)."""

from __future__ import annotations

import click

from glc.cache import KINDS, open_cache

# The option glc compile, run and regress share: compile without reading or writing the cache.
no_cache_option = click.option(
    "--no-cache", is_flag=True,
    help="Compile afresh: neither read nor write the compile and schedule cache "
         "(glc cache info: where it is).")


@click.group("cache")
def cache() -> None:
    """The compile and schedule cache: $GLC_CACHE_DIR, else $XDG_CACHE_HOME/glc, else
    ~/.cache/glc (docs/cache.md)."""


@cache.command()
def info() -> None:
    """Print the cache's location, and its entries and bytes, in all and of each kind."""
    found = open_cache().info()
    click.echo(f"location {found['location']}")
    click.echo(f"entries {found['entries']}, bytes {found['bytes']}")
    for kind in KINDS:
        click.echo(f"  {kind}: entries {found[kind]['entries']}, bytes {found[kind]['bytes']}")


@cache.command()
def clear() -> None:
    """Remove every entry of the cache."""
    cache_ = open_cache()
    removed = cache_.clear()
    click.echo(f"removed {removed} entries from {cache_.root}")
