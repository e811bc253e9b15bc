"""`jackpot resolve [--check] FILE...` on the golden rounds and on scenario files written here.

The golden rounds live in the ``shared`` folder beside the repository
(``shared/scenarios/*.json``, see its README). They are the contract between the rules and the
code, so this test fails loudly when they cannot be found; it never skips.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jackpot.cli import main

SCENARIOS = Path(__file__).resolve().parents[3] / "shared" / "scenarios"


def golden_files() -> list[Path]:
    assert SCENARIOS.is_dir(), f"golden scenarios not found at {SCENARIOS} (shared/ by the repo)"
    files = sorted(SCENARIOS.glob("*.json"))
    assert len(files) >= 9, f"expected at least the 9 golden rounds in {SCENARIOS}, got {files}"
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
    """Every golden round resolves to exactly its `expect` (rules P, S1-S8, E3, E4, P3, M2)."""
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
    rounds (expect error) print a reason naming the card on stderr and the status is 1."""
    files = golden_files()
    accepted = []
    for path in files:
        expect = json.loads(path.read_text(encoding="utf-8"))["expect"]
        if expect.get("error") is not True:
            accepted.append(expect)
    status = main(["resolve", *map(str, files)])
    captured = capsys.readouterr()
    outcomes = [json.loads(line) for line in captured.out.splitlines()]
    assert outcomes == accepted
    refusing = len(files) - len(accepted)
    assert refusing >= 1  # 09-duplicate-card-rejected
    assert status == 1
    assert "DUPLICATE_CARD" in captured.err
    assert "AS" in captured.err


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
    {"error": True},
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
    fine["expect"] = {"error": True}
    path = write(tmp_path, "not-refused", fine)
    assert main(["resolve", "--check", path]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("FAIL not-refused: expected the round to be refused, got ")


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
