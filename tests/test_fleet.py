"""The fault schedule across machines (bench/fleet.py, smaller): three worker machines in network
namespaces made by the test on a private bridge, Redis and PostgreSQL in a namespace of their
own. One machine is killed; another is cut off from Redis and the database for three lease ttls
and healed (its leases lapse and its matches are handed out elsewhere while its calls in flight
come home); then Redis and PostgreSQL are restarted as every machine sees them. The checker of
tests/fault_history.py judges the history: nothing lost or duplicated, calls paid twice unseen
no more than the calls in flight at the faults, every paid call counted but those that died
with the killed machine, no 5xx but a 503 with its reason.

Root only (CI runs as root): skipped, saying why, where `ip netns` is unavailable.
"""
from __future__ import annotations

import pytest

from bench.namespaces import available, ip
from tests.postgres_fixture import PostgresUnavailable, find_binary

LEASE_TTL_S = 2.0


@pytest.mark.slow
def test_a_fleet_of_machines_through_kill_cut_off_and_restarts_loses_and_duplicates_nothing() -> None:
    """About 30 s (over 20 s): four processes start, and the cut-off lasts three lease ttls (6 s;
    the bench's default is the issue's 60 s, scaled down here through JOUST_LEASE_TTL=2 so the
    leases still lapse while the machine is away)."""
    why = available()
    if why:
        pytest.skip(f"the fleet test makes network namespaces: {why}")
    try:
        find_binary("postgres")
    except PostgresUnavailable as missing:
        pytest.skip(str(missing))
    from bench.fleet import FleetOptions, run_fleet

    result = run_fleet(FleetOptions(machines=3, cut_s=3 * LEASE_TTL_S, lease_ttl_s=LEASE_TTL_S, models=7,
                                    questions=4, latency_s=0.4, concurrency=4, timeout_s=120))
    verdict = result.verdict
    print(f"\n{verdict.summary()}\nrecovery: {verdict.recovery_s}; {result.seconds:.1f} s")
    assert verdict.problems() == []
    assert (verdict.matches, verdict.done) == (7 * 6 // 2 * 4, 7 * 6 // 2 * 4)
    assert verdict.in_flight_at_kills > 0, "the killed machine had no call in flight: the kill tested nothing"
    # The cut-off did what it is for: the machine's leases lapsed while it was away, and a
    # machine that could reach Redis handed its matches out again.
    assert "lost leases" in result.logs["m1"], result.logs["m1"][-2000:]
    assert any("handed out again" in result.logs[m] for m in ("m1", "m2")), "no match was handed out again"
    leftovers = ip("netns", "list").stdout + ip("-o", "link", "show").stdout
    assert f"jf{__import__('os').getpid()}" not in leftovers, "namespaces or links were left behind"
