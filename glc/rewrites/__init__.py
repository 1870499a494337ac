"""The Glenside rewrite table, grouped by purpose; each row cites its source."""
