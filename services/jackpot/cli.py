"""The `jackpot` command: one subcommand per service and per tool.

Each subcommand imports its implementation lazily, so `jackpot resolve` never loads Kafka or gRPC.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path


def _resolve(args: argparse.Namespace) -> int:
    from jackpot.tools.resolve import run

    return run(args.files, check=args.check, require_reasons=args.require_reasons)


def _gateway(args: argparse.Namespace) -> int:
    from jackpot.gateway.main import main as gateway_main

    return gateway_main(args.config)


def _pot(args: argparse.Namespace) -> int:
    from jackpot.pot.main import main as pot_main

    return pot_main()


def _audit(args: argparse.Namespace) -> int:
    from jackpot.platform.settings import load
    from jackpot.pot.settings import PotSettings
    from jackpot.tools.audit import run

    settings = load(PotSettings)
    options = settings.kafka_options()
    if args.bootstrap_servers:
        options["bootstrap_servers"] = args.bootstrap_servers
    if args.chain or args.chain_file:
        from jackpot.tools.access_chain import run as run_chain

        topic = args.audit_topic or settings.access.audit_topic
        return run_chain(
            options, topic, args.chain_file, args.export_chain, args.anchors, args.save_anchors
        )
    return run(
        options,
        args.ledger_topic or settings.ledger_topic,
        args.pot_updates_topic or settings.pot_updates_topic,
        args.group,
        args.state,
        args.jobs,
    )


def _report(args: argparse.Namespace) -> int:
    from jackpot.platform.settings import load
    from jackpot.pot.settings import PotSettings
    from jackpot.tools.report import run
    from jackpot.tools.report_document import ReportSettings

    settings = load(PotSettings)
    options = settings.kafka_options()
    if args.bootstrap_servers:
        options["bootstrap_servers"] = args.bootstrap_servers
    topic = args.ledger_topic or settings.ledger_topic
    chosen = {
        "lang": args.lang,
        "time_zone": args.time_zone,
        "casino": args.casino,
        "day_books": args.day_books,
    }
    document = load(ReportSettings).replace(**{k: v for k, v in chosen.items() if v is not None})
    return run(
        options,
        topic,
        args.out,
        args.start,
        args.end,
        args.group,
        checkpoint_interval_seconds=settings.checkpoint_interval_seconds,
        jobs=args.jobs,
        document=document,
        pdf=not args.no_pdf,
    )


def _time_zone(text: str) -> str:
    """An IANA time zone for ``--time-zone`` (argparse names the option when it is not one)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time zone of the IANA database (e.g. America/Santiago)"
        ) from None
    return text


def _restore(args: argparse.Namespace) -> int:
    from jackpot.platform.settings import load
    from jackpot.pot.settings import PotSettings
    from jackpot.tools.restore import run

    if not args.from_ledger:
        print("jackpot restore: say where from: --from-ledger", file=sys.stderr)
        return 2
    settings = load(PotSettings)
    return run(settings, args.group)


def _display(args: argparse.Namespace) -> int:
    from jackpot.display.main import main as display_main

    return display_main()


def _payout(args: argparse.Namespace) -> int:
    from jackpot.payout.main import main as payout_main

    return payout_main()


def _terminal(args: argparse.Namespace) -> int:
    from jackpot.terminal.main import main as terminal_main

    return terminal_main(args.table)


def _wallet(args: argparse.Namespace) -> int:
    from jackpot.wallet.main import main as wallet_main

    return wallet_main()


def _payouts(args: argparse.Namespace) -> int:
    from jackpot.tools.payouts import run

    return run(
        args.pending, args.approve or "", args.void or "", args.reason or "", args.code or ""
    )


def _pki(args: argparse.Namespace) -> int:
    from jackpot.tools.pki import run

    return run(args.pki_args)


def _verify(args: argparse.Namespace) -> int:
    from jackpot.tools.inspection import run

    return run(args.root, args.expect or "", args.seed, args.service)


def _digest(text: str) -> str:
    from jackpot.platform.manifest import parse_digest

    try:
        return parse_digest(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _seed(text: str) -> bytes:
    from jackpot.platform.manifest import parse_seed

    try:
        return parse_seed(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _manifest(args: argparse.Namespace) -> int:
    from jackpot.platform.manifest import run_manifest

    return run_manifest([str(args.root)] if args.root else [])


def _settings(args: argparse.Namespace) -> int:
    from jackpot.tools.settings_doc import markdown

    sys.stdout.write(markdown())
    return 0


def _demo(args: argparse.Namespace) -> int:
    from jackpot.tools.demo import main as demo_main

    if args.print_commands is not None:
        from jackpot.tools.demo import print_commands

        return print_commands(args.print_commands or None)
    return demo_main(
        args.duration,
        args.report,
        args.tables,
        args.rig_rate,
        args.rounds_per_minute,
        args.device_protocol,
        args.studio_players,
    )


def build_parser() -> argparse.ArgumentParser:
    """The `jackpot` parser: each group of subcommands registered by its own function, in the
    order `jackpot --help` lists them."""
    parser = argparse.ArgumentParser(prog="jackpot", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_resolve(commands)
    _add_floor_services(commands)
    _add_payouts(commands)
    _add_demo(commands)
    _add_setup_tools(commands)
    _add_pot(commands)
    _add_audit(commands)
    _add_books(commands)
    return parser


def _add_resolve(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    resolve = commands.add_parser(
        "resolve",
        help="resolve scenario rounds (format of tests/golden/README.md) and print the outcome",
    )
    resolve.add_argument("files", nargs="+", metavar="FILE")
    resolve.add_argument(
        "--check", action="store_true", help="compare with each file's `expect`; PASS/FAIL per file"
    )
    resolve.add_argument(
        "--require-reasons",
        action="store_true",
        help='with --check: an error round must name its reason ({"error": true} fails)',
    )
    resolve.set_defaults(handler=_resolve)


def _add_floor_services(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The services a floor runs beside the pot: gateway, display, payout, dealer terminal."""
    gateway = commands.add_parser(
        "gateway", help="run a table gateway for a pit (device gRPC stream in, Kafka out)"
    )
    gateway.add_argument("--config", required=True, metavar="FILE", help="gateway JSON settings")
    gateway.set_defaults(handler=_gateway)

    display = commands.add_parser(
        "display", help="run the display service (jackpot signs: gRPC stream and web pages)"
    )
    display.set_defaults(handler=_display)

    payout = commands.add_parser(
        "payout", help="run the payout service (one payout per award, dealer terminals, approvals)"
    )
    payout.set_defaults(handler=_payout)

    terminal = commands.add_parser(
        "terminal",
        help="run a table's reference dealer terminal: its screen as a local web page (D3)",
    )
    terminal.add_argument(
        "--table", metavar="ID", help="the table (default: JACKPOT_TERMINAL_TABLE)"
    )
    terminal.set_defaults(handler=_terminal)

    wallet = commands.add_parser(
        "wallet",
        help="run the reference wallet: the operator's side of the wallet protocol, for the demo "
        "and integration tests (O9)",
    )
    wallet.set_defaults(handler=_wallet)


def _add_payouts(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    payouts = commands.add_parser(
        "payouts",
        help="list the open payouts (and the last hour's settled ones); a supervisor approves or "
        "voids",
    )
    payouts.add_argument("--pending", action="store_true", help="only the unpaid ones, with age")
    decision = payouts.add_mutually_exclusive_group()
    decision.add_argument("--approve", metavar="AWARD_ID", help="approve this payout")
    decision.add_argument("--void", metavar="AWARD_ID", help="void this payout")
    decision.add_argument(
        "--code",
        metavar="AWARD_ID",
        help="a one-time code to approve or void this payout at its table's terminal",
    )
    payouts.add_argument("--reason", help="why (required with --approve and --void)")
    payouts.set_defaults(handler=_payouts)


def _add_demo(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = commands.add_parser(
        "demo", help="the whole floor locally: Kafka, every service, ~20 simulated tables"
    )
    demo.add_argument("--duration", type=float, help="play this many seconds, then report")
    demo.add_argument("--report", metavar="FILE", help="write the JSON report here")
    demo.add_argument("--tables", type=int, default=20, help="simulated tables (default 20)")
    demo.add_argument(
        "--rig-rate", type=float, default=0.02, help="share of rounds dealt a made hand"
    )
    demo.add_argument("--rounds-per-minute", type=float, default=30, help="per table (default 30)")
    demo.add_argument(
        "--device-protocol",
        choices=("round", "per-event"),
        default="round",
        help="the controllers send each round in three messages (round, the default) or every "
        "seat's every move (per-event)",
    )
    demo.add_argument(
        "--studio-players",
        type=int,
        default=2_000,
        metavar="N",
        help="online players of the demo's studio table, one bet each per round (O1; default "
        "2,000; 0: no studio table)",
    )
    demo.add_argument(
        "--print-commands",
        nargs="?",
        const="",
        metavar="RUN",
        help="print a shell command line per service of the last demo run (or of RUN) that "
        "starts it again by hand, and exit",
    )
    demo.set_defaults(handler=_demo)


def _add_setup_tools(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Settings table, development CA, software manifest (R6). `pki` is parsed by its own code
    (see :func:`main`); it is listed here for `jackpot --help`."""
    settings = commands.add_parser(
        "settings",
        help="print the table of every service's settings (docs/settings.md is its output)",
    )
    settings.set_defaults(handler=_settings)

    pki = commands.add_parser(
        "pki",
        help="development CA: init, issue (role, table binding), dev (the local floor's set)",
        add_help=False,
    )
    pki.add_argument("pki_args", nargs=argparse.REMAINDER)
    pki.set_defaults(handler=_pki)

    verify = commands.add_parser(
        "verify",
        help="check the installed software against its SHA-256 manifest and the approved digest, "
        "or a running service's files under an inspector's seed (R6) [ROOT]",
    )
    verify.add_argument(
        "--expect",
        type=_digest,
        metavar="DIGEST",
        help="the manifest digest the regulator approved (sha256:<64 hex>): another refuses",
    )
    verify.add_argument(
        "--seed",
        type=_seed,
        metavar="HEX",
        help="the inspector's random seed (16-64 bytes in hex): print the HMAC-SHA-256 of ROOT's "
        "files under it, or with --service compare a running service's answer with it",
    )
    verify.add_argument(
        "--service",
        default="",
        metavar="HOST:PORT",
        help="with --seed: ask this service (mutual TLS, JACKPOT_TLS_*; the inspector role)",
    )
    manifest = commands.add_parser(
        "manifest", help="record the SHA-256 manifest of the installed software (the build) [ROOT]"
    )
    for command, handler in ((verify, _verify), (manifest, _manifest)):
        command.add_argument(
            "root",
            nargs="?",
            type=Path,
            metavar="ROOT",
            help="the package folder (default: the installed jackpot package)",
        )
        command.set_defaults(handler=handler)


def _add_pot(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pot = commands.add_parser(
        "pot",
        help="run the pot service (settings from JACKPOT_* variables, see docs/settings.md)",
    )
    pot.set_defaults(handler=_pot)


def _jobs(text: str) -> int:
    jobs = int(text)
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"--jobs must be 1 or more, not {jobs}")
    return jobs


def _add_jobs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--jobs",
        type=_jobs,
        default=len(os.sched_getaffinity(0)),  # one per core this process may run on
        metavar="N",
        help="processes reading the ledger's partitions side by side (default: one per core)",
    )


def _add_audit(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    audit = commands.add_parser(
        "audit",
        help="recompute every pot group from the ledger; check rule M2 and the latest pot "
        "update (--chain: verify the hash-chained access log)",
    )
    audit.add_argument("--bootstrap-servers", help="default: JACKPOT_BOOTSTRAP_SERVERS")
    audit.add_argument("--ledger-topic", help="default: JACKPOT_LEDGER_TOPIC")
    audit.add_argument("--pot-updates-topic", help="default: JACKPOT_POT_UPDATES_TOPIC")
    audit.add_argument(
        "--group", action="append", default=[], metavar="ID", help="only this pot group (repeat)"
    )
    audit.add_argument(
        "--state",
        type=Path,
        metavar="FILE",
        help="incremental: audit only what follows the clean audit saved in FILE, and save this "
        "one there when everything matches (absent FILE: a full audit that starts it)",
    )
    _add_jobs(audit)
    audit.add_argument(
        "--chain",
        action="store_true",
        help="verify the hash-chained access log instead; name the first tampered entry",
    )
    audit.add_argument("--audit-topic", help="default: JACKPOT_AUDIT_TOPIC (jackpot.audit.v1)")
    audit.add_argument("--chain-file", metavar="FILE", help="verify an exported copy (JSON lines)")
    audit.add_argument("--export-chain", metavar="FILE", help="with --chain: also write a copy")
    audit.add_argument("--anchors", metavar="FILE", help="chain heads recorded earlier to check")
    audit.add_argument("--save-anchors", metavar="FILE", help="record every chain's head here")
    audit.set_defaults(handler=_audit)


def _add_books(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The books from the ledger: a period's report, and a restore of the pot groups' states."""
    report = commands.add_parser(
        "report",
        help="a period's books from the ledger: CSV per section and a document to file, as HTML "
        "and PDF (exit 1 when they do not reconcile)",
    )
    report.add_argument(
        "--from", dest="start", metavar="WHEN", help="ISO 8601; default --to - 1 day"
    )
    report.add_argument(
        "--to", dest="end", metavar="WHEN", help="ISO 8601 (UTC if no zone); default now"
    )
    report.add_argument(
        "--group", action="append", default=[], metavar="ID", help="only this pot group (repeat)"
    )
    report.add_argument(
        "--out",
        default="build/report",
        help="folder for the CSV files, report.html and report.pdf",
    )
    report.add_argument(
        "--lang", choices=("es", "en"), help="the document's language (default: es)"
    )
    report.add_argument(
        "--time-zone",
        type=_time_zone,
        metavar="ZONE",
        help="the casino's time zone for every date (default: America/Santiago)",
    )
    report.add_argument("--casino", metavar="NAME", help="the casino named on the cover")
    report.add_argument(
        "--day-books",
        metavar="DIR",
        help="compose the period of the days kept here, keeping each day read once it is over "
        "(default: JACKPOT_REPORT_DAY_BOOKS; none: the ledger alone)",
    )
    report.add_argument(
        "--no-pdf", action="store_true", help="write report.html only (no Chromium needed)"
    )
    report.add_argument("--bootstrap-servers", help="default: JACKPOT_BOOTSTRAP_SERVERS")
    report.add_argument("--ledger-topic", help="default: JACKPOT_LEDGER_TOPIC")
    _add_jobs(report)
    report.set_defaults(handler=_report)

    restore = commands.add_parser(
        "restore",
        help="rebuild pot group states from the ledger alone when the state topic is lost or "
        "corrupt (stop the pot service first)",
    )
    restore.add_argument("--from-ledger", action="store_true", help="the ledger is the source")
    restore.add_argument(
        "--group", action="append", default=[], metavar="ID", help="only this pot group (repeat)"
    )
    restore.set_defaults(handler=_restore)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["pki"]:  # its own parser, so `jackpot pki --help` shows its commands
        from jackpot.tools.pki import run

        return run(arguments[1:])
    args = build_parser().parse_args(arguments)
    try:
        result: int = args.handler(args)
    except ValueError as error:  # a bad setting (SettingsError): nothing has started yet
        from jackpot.platform.settings import SettingsError, settings_refused

        if not isinstance(error, SettingsError):
            raise
        return settings_refused(error, f"jackpot {args.command}")
    return result


if __name__ == "__main__":
    sys.exit(main())
