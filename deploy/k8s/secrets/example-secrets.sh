#!/usr/bin/env bash
# Print the Secrets an overlay expects but never commits, filled with random placeholder values.
#
#   deploy/k8s/secrets/example-secrets.sh dev | kubectl apply -f -            # a dev cluster
#   deploy/k8s/secrets/example-secrets.sh single-site > /secure/place.yaml   # a starting point
#   JACKPOT_PKI_DIR=.run/k8s-pki deploy/k8s/secrets/example-secrets.sh dev   # ... keeping the CA
#
# Two kinds of Secret are made here:
# - the gateway device credentials: one Secret per gateway, key credentials.json, a JSON object
#   {table id: credential} for every table of that gateway's gateway.json (the gateway's init
#   container refuses to start if a table has none). The values are random and mean nothing to a
#   real table controller: in production, put each controller's real credential in a secret store
#   (Vault, External Secrets, Sealed Secrets, SOPS) and create the same Secret from it;
# - jackpot-ca (type kubernetes.io/tls: tls.crt, tls.key): the CA that cert-manager's Issuer
#   "jackpot-ca" signs the services' certificates with, and that every client certificate
#   (operators, supervisors, dealer terminals, devices, signs) must come from. Here it is a new
#   development CA made by `jackpot pki init`; in production it is an intermediate CA from the
#   operator's PKI. With JACKPOT_PKI_DIR=DIR the CA is made in (or taken from) DIR and kept, so
#   that `jackpot pki issue --dir DIR ...` issues client certificates that the services accept;
#   without it the CA is made in a temporary directory and its key exists only in the output.
#   The jackpot CLI is $JACKPOT, else the repository's .venv/bin/jackpot, else jackpot on PATH.
# Not here: the Strimzi User Operator creates one Secret per KafkaUser (jackpot-gateway,
# jackpot-pot, ...) and the Cluster Operator the CA Secret jackpot-cluster-ca-cert; cert-manager
# writes each service's jackpot-<service>-tls (tls.crt, tls.key, ca.crt).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
k8s=$(cd "$here/.." && pwd)
repo=$(cd "$k8s/../.." && pwd)

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

# ca_secret NAMESPACE: the Secret jackpot-ca with a development CA (`jackpot pki init`).
ca_secret() {
  local jackpot=${JACKPOT:-} dir=${JACKPOT_PKI_DIR:-} made=""
  if [ -z "$jackpot" ]; then
    if [ -x "$repo/.venv/bin/jackpot" ]; then
      jackpot="$repo/.venv/bin/jackpot"
    else
      jackpot=$(command -v jackpot) || {
        echo "example-secrets.sh: no jackpot CLI (make setup, or set JACKPOT)" >&2
        exit 1
      }
    fi
  fi
  if [ -z "$dir" ]; then
    dir=$(mktemp -d)
    made=$dir
  fi
  "$jackpot" pki init --dir "$dir" >/dev/null
  cat <<EOF
---
apiVersion: v1
kind: Secret
metadata:
  name: jackpot-ca
  namespace: $1
  labels:
    app.kubernetes.io/part-of: jackpot
  annotations:
    jackpot.io/placeholder: 'true'  # a development CA from example-secrets.sh; use your PKI's
type: kubernetes.io/tls
data:
  tls.crt: $(base64 <"$dir/ca.crt" | tr -d '\n')
  tls.key: $(base64 <"$dir/ca.key" | tr -d '\n')
EOF
  if [ -n "$made" ]; then
    rm -rf "$made"
  fi
}

case ${1:-} in
  dev)
    secret jackpot-dev jackpot-gateway-devices "$k8s/base/gateway/gateway.json"
    ca_secret jackpot-dev
    ;;
  single-site)
    secret jackpot jackpot-gateway-devices "$k8s/base/gateway/gateway.json"
    ca_secret jackpot
    ;;
  multi-site)
    for site in site-a site-b; do
      secret jackpot "jackpot-gateway-devices-$site" "$k8s/overlays/multi-site/$site/gateway.json"
    done
    ca_secret jackpot
    ;;
  *)
    echo "usage: example-secrets.sh dev|single-site|multi-site" >&2
    exit 2
    ;;
esac
