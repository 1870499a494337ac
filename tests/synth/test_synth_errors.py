"""What `glc synth` says when nextpnr does not finish (no tools needed): its last ERROR line, or,
when it wrote none (stopped from outside, e.g. while routing a congested design), its exit
status and the stage the log had reached."""

from glc.synth.flow import pnr_failure

LOG = """Info: Packing IOs..
Info: Running main analytical placer, max placement attempts per cell = 100.
Info: Running simulated annealing placer for refinement.
Info: Routing globals...
Info: Running router2...
Info:     iter=7 wires=782128 overused=18840 overuse=19396 archfail=NA
"""


def test_a_run_stopped_while_routing_says_so():
    assert pnr_failure(LOG, -15) == \
        "nextpnr was stopped by signal 15 during routing, before writing its report"


def test_a_run_that_fails_in_placement_names_its_stage():
    placing = LOG.split("Info: Routing")[0]
    assert pnr_failure(placing, 1) == \
        "nextpnr exited with status 1 during placement, before writing its report"


def test_an_error_line_is_the_message():
    assert pnr_failure(LOG + "ERROR: Failed to route net 'x'\n", 1) == \
        "nextpnr failed: ERROR: Failed to route net 'x'"
