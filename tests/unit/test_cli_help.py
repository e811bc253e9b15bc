"""Every subcommand of `jackpot` answers ``--help`` with its usage and exit status 0 (issue 25):
none takes ``--help`` for an argument (``jackpot verify --help`` once verified a folder named
``--help``). The subcommands are read from the parser, so a new one is covered by itself."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from jackpot import cli


def subcommands() -> list[str]:
    """The subcommands `jackpot --help` lists, from the parser itself."""
    actions = [
        action
        for action in cli.build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    ]
    assert len(actions) == 1, "the jackpot parser has one set of subcommands"
    return sorted(actions[0].choices)


def test_the_parser_lists_the_subcommands() -> None:
    """The enumeration is not vacuous: it finds the services, the tools and the R6 commands."""
    assert {"gateway", "pot", "payout", "display", "terminal"} <= set(subcommands())
    assert {"demo", "audit", "report", "pki", "verify", "manifest", "resolve"} <= set(subcommands())


@pytest.mark.parametrize("command", subcommands())
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_every_subcommand_answers_help_with_its_usage(
    command: str, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main([command, flag])
    out, err = capsys.readouterr()
    assert exited.value.code == 0, err
    assert out.startswith(f"usage: jackpot {command}"), out
    assert err == ""


def test_the_top_level_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert exited.value.code == 0
    assert out.startswith("usage: jackpot")
    for command in subcommands():
        assert f"    {command}" in out, command


@pytest.mark.parametrize("command", ["verify", "manifest"])
def test_the_manifest_commands_still_take_a_folder(command: str, tmp_path: Path) -> None:
    """``ROOT`` is a positional argument of theirs, as before (test_manifest.py verifies one)."""
    assert cli.build_parser().parse_args([command, str(tmp_path)]).root == tmp_path
    assert cli.build_parser().parse_args([command]).root is None
