"""A real Prometheus next to the local floor: ``make monitor`` (``python -m loadtest.monitor``).

    python -m loadtest.monitor [--listen 127.0.0.1:9090] [--dir .run/monitor]
                               [--scrape-interval 5s]

Stages ``deploy/monitoring/prometheus.yml`` in ``--dir`` with what it names: ``targets.json``, the
demo's metrics ports (``jackpot.tools.demo_floor.METRICS``) labelled as Kubernetes labels its
pods, and ``jackpot-rules.yaml``, the groups of the PrometheusRule of deploy/k8s (the same alerts
run here). Then runs Debian's ``prometheus`` (``make monitoring-tools``) in the foreground until
Ctrl-C; its data is kept in ``--dir``/data. Start ``make demo`` beside it and open http://127.0.0.1:9090/.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path
from typing import Any

import yaml

from jackpot.tools.demo_floor import (
    METRICS,
    REPO,
)

CONFIG = REPO / "deploy" / "monitoring" / "prometheus.yml"
PROMETHEUS_RULE = REPO / "deploy" / "k8s" / "base" / "monitoring" / "prometheusrule.yaml"
RULES_FILE = "jackpot-rules.yaml"
TARGETS_FILE = "targets.json"
# The namespace label of every local target: the dashboard's $namespace is "local" here.
NAMESPACE = "local"


def rule_groups() -> list[dict[str, Any]]:
    """The PrometheusRule's ``spec.groups``: a plain Prometheus rules file's ``groups``."""
    rule = yaml.safe_load(PROMETHEUS_RULE.read_text(encoding="utf-8"))
    groups: list[dict[str, Any]] = rule["spec"]["groups"]
    return groups


def write_rules(path: Path) -> Path:
    path.write_text(yaml.safe_dump({"groups": rule_groups()}, sort_keys=False), encoding="utf-8")
    return path


def targets(metrics_ports: dict[str, int] = METRICS) -> list[dict[str, Any]]:
    """file_sd target groups: one per demo service, with the labels its pod has in Kubernetes."""
    groups = []
    for name, port in metrics_ports.items():
        job, _, site = name.partition("-")
        labels = {"job": job, "pod": name, "namespace": NAMESPACE}
        if site:
            labels["jackpot_io_site"] = f"site-{site}"
        groups.append({"targets": [f"127.0.0.1:{port}"], "labels": labels})
    return groups


def stage(
    directory: Path,
    scrape_interval: str | None = None,
    metrics_ports: dict[str, int] = METRICS,
) -> Path:
    """Write prometheus.yml, targets.json and the rules into ``directory``; the config's path."""
    directory.mkdir(parents=True, exist_ok=True)
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    if scrape_interval:
        config["global"]["scrape_interval"] = scrape_interval
        config["global"]["evaluation_interval"] = scrape_interval
    write_rules(directory / RULES_FILE)
    (directory / TARGETS_FILE).write_text(
        json.dumps(targets(metrics_ports), indent=2) + "\n", encoding="utf-8"
    )
    staged = directory / CONFIG.name
    staged.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return staged


def command(config: Path, listen: str, storage: Path) -> list[str]:
    """The prometheus command line for a staged config."""
    binary = shutil.which("prometheus")
    if binary is None:
        raise SystemExit("prometheus is missing: `make monitoring-tools` installs Debian's package")
    return [
        binary,
        f"--config.file={config}",
        f"--web.listen-address={listen}",
        f"--storage.tsdb.path={storage}",
        "--storage.tsdb.retention.time=2d",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--listen", default="127.0.0.1:9090")
    parser.add_argument("--dir", default=str(REPO / ".run" / "monitor"))
    parser.add_argument("--scrape-interval", default=None, help="e.g. 1s (default: the config's)")
    args = parser.parse_args()
    directory = Path(args.dir)
    argv = command(stage(directory, args.scrape_interval), args.listen, directory / "data")
    print(f"Prometheus on http://{args.listen}/ scraping {len(METRICS)} demo targets", flush=True)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
