"""Helpers of `deploy/local/kafka.sh secure-cluster-up` (run with the project's .venv python).

    kafka_secure.py acls ACCESS_YAML      print one kafka-acls (AclCommand) argument list per line,
                                          tab-separated, for deploy/k8s/access.yaml's matrix
    kafka_secure.py topics ENV_FILE RF    create every topic of jackpot.topics as the admin user,
                                          through the project's own client code (KafkaSecurity)

The ACLs are the production ones: deploy/k8s/access.yaml is the one matrix the Strimzi KafkaUsers
are tested against, and the local secure cluster is given exactly the same grants (principal
``User:jackpot-<service>``). Topics are created by the admin user, as the Topic Operator does in
production; no service user may create, alter or delete anything.
"""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path


def acl_commands(access_yaml: Path) -> list[list[str]]:
    """Argument lists for AclCommand (after --bootstrap-server/--command-config), one per call."""
    import yaml

    matrix = yaml.safe_load(access_yaml.read_text(encoding="utf-8"))
    calls: list[list[str]] = []
    for service, grants in sorted(matrix["services"].items()):
        add = ["--add", "--allow-principal", f"User:jackpot-{service}"]

        def ops(*names: str) -> list[str]:
            return [arg for name in names for arg in ("--operation", name)]

        reads = grants.get("reads") or []
        writes = grants.get("writes") or []
        if reads:
            topics = [arg for topic in reads for arg in ("--topic", topic)]
            calls.append([*add, *ops("Describe", "Read"), *topics])
        if writes:
            topics = [arg for topic in writes for arg in ("--topic", topic)]
            calls.append([*add, *ops("Describe", "Write"), *topics])
        for group in grants.get("groups") or []:
            calls.append([*add, *ops("Describe", "Read"), "--group", group])
        for prefix in grants.get("transactional_ids") or []:
            calls.append(
                [
                    *add,
                    *ops("Describe", "Write"),
                    "--transactional-id",
                    prefix,
                    "--resource-pattern-type",
                    "prefixed",
                ]
            )
    return calls


def read_env(path: Path) -> dict[str, str]:
    """``export NAME=value`` lines (as kafka.sh writes client-<user>.env) into a dict."""
    environ: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, value = line.removeprefix("export ").partition("=")
        environ[name] = shlex.split(value)[0] if value else ""
    return environ


async def create_topics(env_file: Path, replication_factor: int) -> None:
    from jackpot.platform.kafka import KafkaSecurity, ensure_topics
    from jackpot.platform.settings import load
    from jackpot.topics import ALL_TOPICS

    environ = read_env(env_file)
    security = load(KafkaSecurity, environ)
    await ensure_topics(
        environ["KAFKA_BOOTSTRAP_SERVERS"],
        ALL_TOPICS,
        replication_factor,
        request_timeout_ms=30_000,
        **security.client_options(),
    )


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "acls":
        for call in acl_commands(Path(argv[1])):
            print("\t".join(call))
        return 0
    if len(argv) >= 2 and argv[0] == "topics":
        replication_factor = int(argv[2]) if len(argv) > 2 else 3
        asyncio.run(create_topics(Path(argv[1]), replication_factor))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
