"""The `jackpot` command: one subcommand per service and per tool.

Each subcommand imports its implementation lazily, so `jackpot resolve` never loads Kafka or gRPC.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _resolve(args: argparse.Namespace) -> int:
    from jackpot.tools.resolve import run

    return run(args.files, check=args.check)


def _gateway(args: argparse.Namespace) -> int:
    from jackpot.gateway.main import main as gateway_main

    return gateway_main(args.config)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jackpot", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    resolve = commands.add_parser(
        "resolve",
        help="resolve scenario rounds (shared/scenarios format) and print the outcome as JSON",
    )
    resolve.add_argument("files", nargs="+", metavar="FILE")
    resolve.add_argument(
        "--check", action="store_true", help="compare with each file's `expect`; PASS/FAIL per file"
    )
    resolve.set_defaults(handler=_resolve)

    gateway = commands.add_parser(
        "gateway", help="run a table gateway for a pit (device gRPC stream in, Kafka out)"
    )
    gateway.add_argument("--config", required=True, metavar="FILE", help="gateway JSON settings")
    gateway.set_defaults(handler=_gateway)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.handler(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
