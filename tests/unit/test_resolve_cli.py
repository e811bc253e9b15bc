"""`jackpot resolve [--check] FILE...` on the golden rounds and on scenario files written here.

The golden rounds live in ``tests/golden/*.json`` (format in its README). They are the contract
between the rules and the code, so this test fails loudly when they cannot be found; it never skips.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jackpot.cli import main
from jackpot.domain.engine import PotGroup
from jackpot.domain.errors import Reason

SCENARIOS = Path(__file__).resolve().parents[1] / "golden"


def golden_files() -> list[Path]:
    assert SCENARIOS.is_dir(), f"golden scenarios not found at {SCENARIOS}"
    files = sorted(SCENARIOS.glob("*.json"))
    assert len(files) >= 24, f"expected at least the 24 golden rounds in {SCENARIOS}, got {files}"
    return files


def write(tmp_path: Path, name: str, scenario: dict[str, Any]) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(scenario), encoding="utf-8")
    return str(path)


def scenario(
    results: list[dict[str, Any]],
    expect: dict[str, Any],
    *,
    game: str = "caribbean",
    main_pot: int | str = 1_000_000,
    reserves: list[dict[str, Any]] | None = None,
    base: int = 0,
    community: list[str] | None = None,
) -> dict[str, Any]:
    round_: dict[str, Any] = {"table": "T01", "results": results}
    if community is not None:
        round_["community"] = community
    return {
        "name": "written by test_resolve_cli",
        "rules": [],
        "game": game,
        "pot": {
            "main": main_pot,
            "reserves": reserves if reserves is not None else [{"name": "reserve1", "balance": 0}],
            "base": base,
        },
        "paytable": "scj-poker",
        "round": round_,
        "expect": expect,
    }


def summary_line(out: str) -> str:
    lines = out.strip().splitlines()
    assert lines, "no output"
    return lines[-1]


# ------------------------------------------------------------------------------ golden rounds


def test_golden_scenarios_all_pass(capsys: pytest.CaptureFixture[str]) -> None:
    """Every golden round resolves to exactly its `expect` (each file's `rules` name the rules
    it exercises; tests/unit/test_rules_doc.py counts them as tests of those rules)."""
    files = golden_files()
    status = main(["resolve", "--check", *map(str, files)])
    out = capsys.readouterr().out
    assert summary_line(out) == f"{len(files)} passed, 0 failed"
    assert status == 0
    for path in files:
        assert f"PASS {path.stem}" in out.splitlines()
    assert "FAIL" not in out


def test_golden_scenarios_resolve_to_their_expect_as_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without --check: one JSON outcome per accepted file, equal to its `expect`; refused
    rounds (expect error) print the reason and the seat or card on stderr and the status is 1."""
    files = golden_files()
    accepted = []
    reasons = []
    for path in files:
        expect = json.loads(path.read_text(encoding="utf-8"))["expect"]
        if "error" in expect:
            reasons.append(expect["error"])
        else:
            accepted.append(expect)
    status = main(["resolve", *map(str, files)])
    captured = capsys.readouterr()
    outcomes = [json.loads(line) for line in captured.out.splitlines()]
    assert outcomes == accepted
    assert len(reasons) >= 3  # 09 duplicate card, 17 bet above the limit, 18 card count
    assert status == 1
    assert [line.split(": ")[1] for line in captured.err.splitlines()] == reasons
    assert "card AS appears at seat 1 and at seat 2" in captured.err


def test_golden_readme_lists_every_round_with_its_rules() -> None:
    """tests/golden/README.md's table of rounds matches the files: names and `rules`."""
    listed = {}
    for line in (SCENARIOS / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 3 and cells[0][:2].isdigit():
            listed[cells[0]] = cells[1].split(", ")
    rounds = {
        path.stem: json.loads(path.read_text(encoding="utf-8"))["rules"] for path in golden_files()
    }
    assert listed == rounds


def test_golden_error_rounds_name_their_reason() -> None:
    """The project's error rounds say why the round must be refused, never a bare true."""
    for path in golden_files():
        expect = json.loads(path.read_text(encoding="utf-8"))["expect"]
        if "error" in expect:
            assert expect == {"error": expect["error"]}, path.name
            assert expect["error"] in {r.value for r in Reason}, path.name


# ---------------------------------------------------------------------- scenarios written here

ROYAL_AFTER_FLUSH = scenario(
    [
        {"seat": 5, "bet": 1000, "cards": ["AH", "KH", "QH", "JH", "TH"]},
        {"seat": 1, "bet": 2000, "cards": ["2C", "6C", "9C", "JC", "AC"]},
    ],
    # flush 50 x 2,000 = 100,000 -> 1,000,000.5 - 100,000 = 900,000.5; the royal takes
    # 900,000 (S6: floored), 0.5 stays; main is reseeded to base 100,000: 99,999.5 from reserve1.
    {
        "awards": [
            {"seat": 1, "prize": "FLUSH", "amount": 100_000},
            {"seat": 5, "prize": "ROYAL_FLUSH", "amount": 900_000},
        ],
        "main": "100000",
        "reserves": ["400000.5"],
        "house_advance": "0",
    },
    main_pot="1000000.5",
    reserves=[{"name": "reserve1", "balance": 500_000}],
    base=100_000,
)


def test_written_scenario_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "royal-after-flush", ROYAL_AFTER_FLUSH)
    status = main(["resolve", "--check", path])
    out = capsys.readouterr().out
    assert out.splitlines() == ["PASS royal-after-flush", "1 passed, 0 failed"]
    assert status == 0


def test_wrong_expectation_fails_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file whose `expect` is wrong is reported as FAIL with what was got; exit status 1."""
    wrong = json.loads(json.dumps(ROYAL_AFTER_FLUSH))
    wrong["expect"]["awards"][1]["amount"] = 900_001  # S6 says 900,000: the fraction stays
    good = write(tmp_path, "good", ROYAL_AFTER_FLUSH)
    bad = write(tmp_path, "wrong-royal", wrong)
    status = main(["resolve", "--check", good, bad])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "PASS good"
    assert lines[1].startswith("FAIL wrong-royal: got ")
    assert '"amount": 900000' in lines[1]
    assert '"amount": 900001' in lines[1]
    assert summary_line(out) == "1 passed, 1 failed"
    assert status == 1


GO_POKER_DUPLICATE = scenario(
    [
        {"seat": 1, "bet": 1000, "cards": ["JS", "QS", "KS"]},
        {"seat": 4, "bet": 1000, "cards": ["2H", "AS", "9C"]},  # AS is also a community card
    ],
    {"error": "DUPLICATE_CARD"},
    game="go_poker",
    main_pot=2_000_000,
    community=["TS", "AS"],
)


def test_go_poker_duplicate_between_community_and_seat_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One deck per round: a community card also dealt to a seat refuses the round (PASS when
    the file expects an error); without --check the reason names the card, exit status 1."""
    path = write(tmp_path, "go-dup", GO_POKER_DUPLICATE)
    assert main(["resolve", "--check", path]) == 0
    assert capsys.readouterr().out.splitlines() == ["PASS go-dup", "1 passed, 0 failed"]

    assert main(["resolve", path]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "DUPLICATE_CARD" in captured.err
    assert "AS" in captured.err
    assert "community" in captured.err
    assert "seat 4" in captured.err


def test_refused_round_with_an_outcome_expected_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expecting_award = json.loads(json.dumps(GO_POKER_DUPLICATE))
    expecting_award["expect"] = {
        "awards": [{"seat": 1, "prize": "ROYAL_FLUSH", "amount": 2_000_000}],
        "main": "0",
        "reserves": ["0"],
        "house_advance": "0",
    }
    path = write(tmp_path, "go-dup-expects-award", expecting_award)
    assert main(["resolve", "--check", path]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("FAIL go-dup-expects-award: refused: DUPLICATE_CARD")
    assert summary_line(out) == "0 passed, 1 failed"


def test_accepted_round_expected_to_be_refused_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fine = json.loads(json.dumps(ROYAL_AFTER_FLUSH))
    fine["expect"] = {"error": "DUPLICATE_CARD"}
    path = write(tmp_path, "not-refused", fine)
    assert main(["resolve", "--check", "--require-reasons", path]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("FAIL not-refused: expected the round to be refused, got ")


# ------------------------------------------------------------------- refused rounds: the reason


def test_a_refusal_for_another_reason_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """expect.error names the reason: a round refused for a different one is a FAIL."""
    wrong = json.loads(json.dumps(GO_POKER_DUPLICATE))
    wrong["expect"] = {"error": "INVALID_CARD"}
    path = write(tmp_path, "wrong-reason", wrong)
    assert main(["resolve", "--check", "--require-reasons", path]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("FAIL wrong-reason: refused with DUPLICATE_CARD, expected INVALID_CARD")
    assert "card AS appears at community and at seat 4" in line


def test_a_refused_round_that_changed_a_balance_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refusal must change nothing: an engine that moved money before refusing fails the
    check even though the reason is the expected one, and the FAIL names the balance."""
    resolve_round = PotGroup.resolve_round

    def leaky(self: PotGroup, *args: Any, **kwargs: Any) -> Any:
        self.balances["main"] -= 10**12  # one peso gone before the refusal
        return resolve_round(self, *args, **kwargs)

    monkeypatch.setattr(PotGroup, "resolve_round", leaky)
    path = write(tmp_path, "leaky", GO_POKER_DUPLICATE)
    assert main(["resolve", "--check", "--require-reasons", path]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert line == (
        "FAIL leaky: refused (DUPLICATE_CARD), but the refused command changed balances: "
        "pot main 2000000 -> 1999999"
    )


def test_a_refused_lock_that_collected_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same for a lock (a file with `config`): every balance counts, the totals of M2 too."""
    lock_round = PotGroup.lock_round

    def collects_then_refuses(self: PotGroup, table: str, round_id: str, bets: Any) -> Any:
        self.collected += 5000 * 10**12
        self.balances["main"] += 5000 * 10**12
        return lock_round(self, table, round_id, bets)

    monkeypatch.setattr(PotGroup, "lock_round", collects_then_refuses)
    path = str(SCENARIOS / "17-bet-above-the-limit-rejected.json")
    assert main(["resolve", "--check", "--require-reasons", path]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert "refused (BET_OUT_OF_LIMITS), but the refused command changed balances: " in line
    assert "collected 0 -> 5000, pot main 500000 -> 505000" in line


def test_a_bare_error_true_is_refused_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """{"error": true} names no reason: with --require-reasons (the project's own rounds) FAIL
    saying which reason to write; without it (the regulator-side form) PASS saying the reason."""
    unnamed = json.loads(json.dumps(GO_POKER_DUPLICATE))
    unnamed["expect"] = {"error": True}
    path = write(tmp_path, "unnamed", unnamed)
    assert main(["resolve", "--check", "--require-reasons", path]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith(
        "FAIL unnamed: expect.error is true, which names no reason: write the reason the round "
        'must be refused, e.g. {"error": "DUPLICATE_CARD"}'
    )
    assert main(["resolve", "--check", path]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "PASS unnamed (refused with DUPLICATE_CARD; the file names no reason)",
        "1 passed, 0 failed",
    ]


def test_a_bare_error_true_still_needs_unchanged_balances(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    resolve_round = PotGroup.resolve_round

    def leaky(self: PotGroup, *args: Any, **kwargs: Any) -> Any:
        self.house_advance += 10**12
        return resolve_round(self, *args, **kwargs)

    monkeypatch.setattr(PotGroup, "resolve_round", leaky)
    unnamed = json.loads(json.dumps(GO_POKER_DUPLICATE))
    unnamed["expect"] = {"error": True}
    path = write(tmp_path, "unnamed-leaky", unnamed)
    assert main(["resolve", "--check", path]) == 1
    # the opening balances (2,000,000) are house advances too (C4)
    assert "house_advance 2000000 -> 2000001" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("expect", "why"),
    [
        ({"error": "DUPLICATE_CARDS"}, "expect.error must name why the round is refused, one of"),
        ({"error": False}, "expect.error must name why the round is refused"),
        ({"error": "DUPLICATE_CARD", "main": "0"}, "an error round's expect holds only 'error'"),
    ],
)
def test_a_malformed_expected_error_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], expect: dict[str, Any], why: str
) -> None:
    bad = json.loads(json.dumps(GO_POKER_DUPLICATE))
    bad["expect"] = expect
    path = write(tmp_path, "bad-error", bad)
    assert main(["resolve", "--check", path]) == 1
    assert why in capsys.readouterr().out.splitlines()[0]


def test_an_expected_field_the_resolver_does_not_produce_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo in `expect` is not silently ignored."""
    typo = json.loads(json.dumps(ROYAL_AFTER_FLUSH))
    typo["expect"]["house_advanced"] = "0"
    path = write(tmp_path, "typo", typo)
    assert main(["resolve", "--check", path]) == 1
    out = capsys.readouterr().out
    assert "expect names fields the resolver does not produce: ['house_advanced']" in out


# ------------------------------------------------- collected rounds, mystery trigger, versions


def test_config_mode_collects_the_bets_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With `config`, pot is before the lock: 10 % commission on 2,000 leaves 1,800, 75 % to
    main (1,350) and 25 % to reserve1 (450). The flush pays 50 x 1,000 = 50,000:
    main 100,000 + 1,350 - 50,000 = 51,350."""
    collected = scenario(
        [
            {"seat": 1, "bet": 1000, "cards": ["2C", "6C", "9C", "JC", "AC"]},
            {"seat": 2, "bet": 1000, "cards": ["3D", "7S", "8H", "JD", "4S"]},
        ],
        {
            "awards": [{"seat": 1, "prize": "FLUSH", "amount": 50_000}],
            "main": "51350",
            "reserves": ["450"],
            "house_advance": "0",
        },
        main_pot=100_000,
    )
    collected["config"] = {
        "commission_percent": "10",
        "pots": [{"name": "main", "percent": 75}, {"name": "reserve1", "percent": 25}],
    }
    path = write(tmp_path, "collected", collected)
    assert main(["resolve", "--check", path]) == 0, capsys.readouterr().out


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"config": {"pots": [{"name": "main", "percent": 100}]}}, "config.pots must name exactly"),
        ({"config": {"base": 5}}, "config fields ['base'] are not allowed"),
        ({"config": [1]}, "config must be an object"),
        ({"pending_config": {"version": 2, "colour": "red"}}, "pending_config fields ['colour']"),
        (
            {
                "config": {
                    "mystery": {"pot": "reserve1", "min": 10, "max": 20},
                    "pots": [{"name": "main", "percent": 90}, {"name": "reserve1", "percent": 10}],
                }
            },
            "config.mystery needs pot.mystery_trigger",
        ),
        (
            {
                "config": {
                    "mystery": {"pot": "reserve1", "min": 10, "max": 20},
                    "pots": [{"name": "main", "percent": 90}, {"name": "reserve1", "percent": 10}],
                },
                "mystery_trigger": 21,
            },
            "pot.mystery_trigger 21 is outside mystery 10-20",
        ),
        ({"mystery_trigger": 15}, "pot.mystery_trigger needs config.mystery"),
    ],
)
def test_malformed_config_fields_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], why: str
) -> None:
    bad = json.loads(json.dumps(ROYAL_AFTER_FLUSH))
    if "mystery_trigger" in change:
        bad["pot"]["mystery_trigger"] = change.pop("mystery_trigger")
    bad.update(change)
    bad["expect"] = {"error": "MALFORMED"}
    path = write(tmp_path, "bad-config", bad)
    assert main(["resolve", "--check", path]) == 0, capsys.readouterr().out
    assert main(["resolve", path]) == 1
    assert why in capsys.readouterr().err


def test_a_pending_config_that_is_not_newer_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """C7: pending_config must be a newer version (the implicit configuration is version 1)."""
    stale = json.loads(json.dumps(ROYAL_AFTER_FLUSH))
    stale["pending_config"] = {"version": 1, "base": 5}
    stale["expect"] = {"error": "INVALID_CONFIG"}
    path = write(tmp_path, "stale", stale)
    assert main(["resolve", "--check", path]) == 0, capsys.readouterr().out


def test_go_poker_scenario_resolves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """P3 through the CLI: three own cards plus the two community cards T-A of spades.

    Seat 2's A-A-A with the community ace is four of a kind: 500 x 3,000 = 1,500,000 (S1),
    main 2,000,000 -> 500,000. Seat 1's J-Q-K of spades makes a royal: all 500,000 (S2).
    Seat 3's T-T-2 is three tens: nothing (P2). Main reseeded to base 250,000 from reserve1.
    """
    ok = scenario(
        [
            {"seat": 1, "bet": 1000, "cards": ["JS", "QS", "KS"]},
            {"seat": 2, "bet": 3000, "cards": ["AH", "AD", "AC"]},
            {"seat": 3, "bet": 1000, "cards": ["TH", "TD", "2C"]},
        ],
        {
            "awards": [
                {"seat": 2, "prize": "FOUR_OF_A_KIND", "amount": 1_500_000},
                {"seat": 1, "prize": "ROYAL_FLUSH", "amount": 500_000},
            ],
            "main": "250000",
            "reserves": ["250000"],
            "house_advance": "0",
        },
        game="go_poker",
        main_pot=2_000_000,
        reserves=[{"name": "reserve1", "balance": 500_000}],
        base=250_000,
        community=["TS", "AS"],
    )
    path = write(tmp_path, "go-quads-royal", ok)
    status = main(["resolve", "--check", path])
    out = capsys.readouterr().out
    assert out.splitlines() == ["PASS go-quads-royal", "1 passed, 0 failed"]
    assert status == 0


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{not json", "cannot read scenario"),
        ("[1, 2]", "cannot read scenario"),
        (json.dumps({"game": "caribbean"}), "no 'expect' object"),
    ],
)
def test_unreadable_files_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, why: str
) -> None:
    path = tmp_path / "broken.json"
    path.write_text(content, encoding="utf-8")
    assert main(["resolve", "--check", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("FAIL broken: ")
    assert why in out
    assert summary_line(out) == "0 passed, 1 failed"


def test_missing_file_fails_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["resolve", "--check", str(tmp_path / "nope.json")]) == 1
    assert "FAIL nope: cannot read scenario" in capsys.readouterr().out


def test_resolve_needs_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["resolve", "--check"])
    assert caught.value.code == 2
    assert "FILE" in capsys.readouterr().err
