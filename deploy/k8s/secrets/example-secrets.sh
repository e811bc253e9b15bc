#!/usr/bin/env bash
# Print the Secrets an overlay expects but never commits, filled with random placeholder values.
#
#   deploy/k8s/secrets/example-secrets.sh dev | kubectl apply -f -            # a dev cluster
#   deploy/k8s/secrets/example-secrets.sh single-site > /secure/place.yaml   # a starting point
#
# Only the gateway device credentials are made here: one Secret per gateway, key credentials.json,
# a JSON object {table id: credential} for every table of that gateway's gateway.json (the
# gateway's init container refuses to start if a table has none). The values are random and mean
# nothing to a real table controller: in production, put each controller's real credential in a
# secret store (Vault, External Secrets, Sealed Secrets, SOPS) and create the same Secret from it.
# Kafka credentials are not here: the Strimzi User Operator creates one Secret per KafkaUser
# (jackpot-gateway, jackpot-pot, ...), and the Cluster Operator the CA Secret
# jackpot-cluster-ca-cert.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
k8s=$(cd "$here/.." && pwd)

# secret NAMESPACE NAME GATEWAY_JSON: one Secret with a random credential for each table.
secret() {
  python3 - "$1" "$2" "$3" <<'EOF'
import json
import secrets
import sys

namespace, name, path = sys.argv[1:4]
with open(path, encoding="utf-8") as file:
    tables = [table["table_id"] for table in json.load(file)["tables"]]
credentials = {table: "placeholder-" + secrets.token_urlsafe(24) for table in tables}
print("---")
print("apiVersion: v1")
print("kind: Secret")
print("metadata:")
print(f"  name: {name}")
print(f"  namespace: {namespace}")
print("  labels:")
print("    app.kubernetes.io/name: gateway")
print("    app.kubernetes.io/part-of: jackpot")
print("  annotations:")
print("    jackpot.io/placeholder: 'true'  # random values from example-secrets.sh; replace them")
print("type: Opaque")
print("stringData:")
print(f"  credentials.json: '{json.dumps(credentials)}'")
EOF
}

case ${1:-} in
  dev)
    secret jackpot-dev jackpot-gateway-devices "$k8s/base/gateway/gateway.json"
    ;;
  single-site)
    secret jackpot jackpot-gateway-devices "$k8s/base/gateway/gateway.json"
    ;;
  multi-site)
    for site in site-a site-b; do
      secret jackpot "jackpot-gateway-devices-$site" "$k8s/overlays/multi-site/$site/gateway.json"
    done
    ;;
  *)
    echo "usage: example-secrets.sh dev|single-site|multi-site" >&2
    exit 2
    ;;
esac
