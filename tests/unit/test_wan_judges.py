"""The WAN run's judges (loadtest.wan, issue 28) on made-up timelines: each refuses what it must."""

from __future__ import annotations

import argparse

from loadtest.site_cutoff import first_status_after
from loadtest.wan import (
    PROFILES,
    all_open_at,
    closes_within,
    delivered_after,
    locks_within,
    missed_bounds,
    overstated,
    p99_ms,
    signs_agree_after,
    signs_closed_within,
    wan_arguments,
)

from jackpot.sim.floor_stats import FloorStats

CHANGES = {
    "B-1": [(100.0, False), (104.0, True), (150.0, False), (158.0, True)],
    "B-2": [(151.0, False), (157.0, True)],
}


def test_a_close_during_the_steady_phase_is_spurious_and_one_during_the_cut_is_not() -> None:
    assert closes_within(CHANGES, {"B-1", "B-2"}, [(90.0, 120.0)]) == 1
    assert closes_within(CHANGES, {"B-1", "B-2"}, [(105.0, 149.0)]) == 0
    assert closes_within(CHANGES, {"B-2"}, [(90.0, 120.0)]) == 0


def test_the_cut_closes_and_reopens_when_the_last_table_does() -> None:
    assert first_status_after(CHANGES, {"B-1", "B-2"}, 149.0, is_open=False) == 2.0
    assert first_status_after(CHANGES, {"B-1", "B-2"}, 149.5, is_open=True) == 8.5
    assert (
        first_status_after(CHANGES, {"B-1", "B-2"}, 159.0, is_open=True) is None
    )  # never told again


def test_after_a_flap_every_table_must_be_open_again() -> None:
    assert all_open_at(CHANGES, {"B-1", "B-2"}, 159.0)
    assert not all_open_at(CHANGES, {"B-1", "B-2"}, 155.0)
    assert all_open_at({}, {"B-1"}, 10.0)  # a table never told anything stayed open


def test_locks_during_a_stall_do_not_count_toward_the_profiles_p99() -> None:
    stats = FloorStats()
    stats.lock_to_sign_by_table["B-1"] = [(10.0, 0.1), (20.0, 2.5), (30.0, 0.2), (99.0, 9.0)]
    calm = locks_within(stats, ["B-1"], [(0.0, 50.0)], [(19.0, 23.0)])
    assert calm == [0.1, 0.2]
    assert p99_ms(calm) == 200.0
    assert p99_ms([]) is None


def test_a_missed_bound_a_missing_figure_or_bad_books_fail_the_profile() -> None:
    figures = {
        "spurious_closes": 0,
        "cut_closed_after_seconds": 5.2,
        "cut_reopened_after_seconds": 3.0,
        "remote_p99_lock_to_sign_ms": 400.0,
        "flaps": 4,
        "flaps_not_reopened": [],
        "books_ok": True,
    }
    bounds = {
        "spurious_closes": 0,
        "cut_closed_after_seconds": 6.0,
        "cut_reopened_after_seconds": 10.0,
        "remote_p99_lock_to_sign_ms": 500.0,
    }
    assert missed_bounds(figures, bounds) == []
    assert missed_bounds({**figures, "spurious_closes": 1}, bounds) == [
        "spurious_closes 1 (bound 0)"
    ]
    assert missed_bounds({**figures, "cut_reopened_after_seconds": None}, bounds) == [
        "cut_reopened_after_seconds None (bound 10.0)"
    ]
    assert missed_bounds({**figures, "flaps": 0}, bounds) == ["no flap ran"]
    assert missed_bounds({**figures, "books_ok": False}, bounds) == ["the books"]
    assert missed_bounds({**figures, "flaps_not_reopened": [61.0]}, bounds) == [
        "not reopened after the flaps at [61.0] s"
    ]


def test_the_profiles_put_their_delay_both_ways_and_the_satellite_is_thin() -> None:
    regional = PROFILES["regional"]
    kinds = [(t.kind, t.stream) for t in regional.toxics()]
    assert ("latency", "downstream") in kinds
    assert ("latency", "upstream") in kinds
    assert regional.round_trip_ms == 80
    (reset,) = [t for t in regional.toxics() if t.kind == "reset_peer"]
    assert reset.toxicity == 0.005
    rates = [t.attributes["rate"] for t in PROFILES["satellite"].toxics() if t.kind == "bandwidth"]
    assert rates == [125, 125]  # 1 Mbit/s each way, in Toxiproxy's KB/s


def test_the_spool_is_delivered_when_it_is_first_seen_empty_after_the_return() -> None:
    samples = [(10.0, 0.0), (12.0, 14.0), (20.0, 31.0), (21.0, 9.0), (21.6, 0.0), (22.0, 0.0)]
    assert delivered_after(samples, 20.5) == 1.1
    assert delivered_after(samples[:4], 20.5) is None  # never seen empty: not delivered


SIGNS = [
    (10.0, "site", "poker", True, 1000),
    (20.0, "site", "poker", False, 1000),  # the cut: the site's sign closed
    (31.0, "site", "poker", True, 1000),  # back, showing what the pot held before the cut
    (32.0, "site", "poker", True, 1400),  # caught up
]
POT = {"poker": ([9.0, 29.0, 31.5, 40.0], [1000, 1200, 1400, 300])}  # the pot paid out at 40


def test_the_site_signs_closed_agree_again_and_never_overstate_the_pot() -> None:
    assert signs_closed_within(SIGNS, [(0.0, 15.0)]) == 0
    assert signs_closed_within(SIGNS, [(15.0, 25.0)]) == 1
    assert signs_agree_after(SIGNS, POT, 30.5, fresh=1.0) == 1.5  # 1000 is stale at 31
    assert signs_agree_after(SIGNS[:3], POT, 30.5, fresh=1.0) is None  # never caught up
    assert overstated(SIGNS, POT, 5.0) == []
    late = [*SIGNS, (46.0, "site", "poker", True, 1400)]  # 6 s after the pot paid out
    assert overstated(late, POT, 5.0) == [(46.0, "poker", 1400, 300)]
    assert overstated(late, POT, 7.0) == []  # within the allowance, 1400 was the pot's


def test_the_fault_suite_runs_the_profiles_it_names_with_its_own_floor_rate() -> None:
    suite = argparse.Namespace(wan=["metro", "satellite"], rounds_per_minute=30.0, rig_rate=0.1)
    args = wan_arguments(suite)
    assert args.profiles == ["metro", "satellite"]
    assert (args.rounds_per_minute, args.rig_rate) == (30.0, 0.1)
    assert (args.steady, args.cut, args.flap) == (60.0, 30.0, 120.0)  # make wan's phases
