"""Init container: the gateway's settings file = the ConfigMap's tables + the Secret's credentials.

usage: python render-config.py TEMPLATE.json CREDENTIALS.json OUTPUT.json

CREDENTIALS.json maps table id to device credential ({"SCL-CAR-01": "...", ...}); it comes from a
Secret created out of band (deploy/k8s/secrets/example-secrets.sh shows the shape). The output goes
to a memory-backed emptyDir, readable only by the gateway's user. A table without a credential, or
a credential for no configured table, stops the pod here, before the gateway starts.
"""

import json
import os
import sys


def main(template_path: str, credentials_path: str, output_path: str) -> int:
    with open(template_path, encoding="utf-8") as file:
        settings = json.load(file)
    with open(credentials_path, encoding="utf-8") as file:
        credentials = json.load(file)
    tables = {table["table_id"] for table in settings["tables"]}
    missing = sorted(tables - credentials.keys())
    unknown = sorted(credentials.keys() - tables)
    if missing or unknown:
        message = f"render-config: no credential for {missing}; unknown tables {unknown}"
        print(message, file=sys.stderr)
        return 1
    for table in settings["tables"]:
        table["credential"] = credentials[table["table_id"]]
    descriptor = os.open(output_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump(settings, file)
    print(f"render-config: {len(tables)} tables for gateway {settings.get('name')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
