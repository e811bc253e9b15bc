#!/usr/bin/env bash
# The tools and schemas that render and validate deploy/k8s offline, installed from registries only.
#
#   tools.sh [install]    install whatever is missing (idempotent; a second run takes a second)
#   tools.sh env          print KUSTOMIZE=..., STRIMZI_CRDS=..., PROMETHEUS_OPERATOR_CRDS=...,
#                         CERT_MANAGER_CRDS=...
#   tools.sh kustomize    print the path of the kustomize binary
#
# What it installs, into JACKPOT_CACHE (default ~/.cache/jackpot), outside git:
#   bin/kustomize                      sigs.k8s.io/kustomize/kustomize/v5 (Go module proxy,
#                                      `go install`, built with the machine's Go)
#   crds/strimzi-<v>/*.yaml            Strimzi's CRDs, generated from io.strimzi:api with
#                                      io.strimzi:crd-generator (Maven Central, schemas/strimzi/
#                                      pom.xml), as Strimzi's own build does; needs Java 21+
#   crds/prometheus-operator-<v>/*.yaml  the Prometheus Operator's CRDs, generated from its Go API
#                                      module with controller-gen (Go module proxy,
#                                      schemas/prometheus-operator/go.mod), as its own build does
#   crds/cert-manager-<v>/*.yaml       cert-manager's Issuer and Certificate CRDs, as its module
#                                      ships them in deploy/crds (controller-gen output; Go module
#                                      proxy, schemas/cert-manager/go.mod and go.sum)
# The Kubernetes OpenAPI JSON schemas come from the PyPI package kubernetes-validate (pip).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${JACKPOT_CACHE:-$HOME/.cache/jackpot}

KUSTOMIZE_VERSION=v5.8.2   # v5.8.3 needs Go 1.27; this machine kind has Go 1.26
STRIMZI_VERSION=$(sed -n 's:.*<strimzi.version>\(.*\)</strimzi.version>.*:\1:p' \
  "$here/schemas/strimzi/pom.xml")
PROMETHEUS_OPERATOR_MODULE=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring
PROMETHEUS_OPERATOR_VERSION=$(awk -v m="$PROMETHEUS_OPERATOR_MODULE" '$1 == "require" && $2 == m \
  {print $3}' "$here/schemas/prometheus-operator/go.mod")

kustomize_bin="$cache/bin/kustomize"
strimzi_crds="$cache/crds/strimzi-$STRIMZI_VERSION"
promop_crds="$cache/crds/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION"
CERT_MANAGER_MODULE=github.com/cert-manager/cert-manager
CERT_MANAGER_VERSION=$(awk -v m="$CERT_MANAGER_MODULE" '$1 == "require" && $2 == m {print $3}' \
  "$here/schemas/cert-manager/go.mod")
certmanager_crds="$cache/crds/cert-manager-$CERT_MANAGER_VERSION"

# The machine's own Go, never a downloaded toolchain.
export GOTOOLCHAIN=local GOFLAGS=-mod=mod

log() { printf 'tools.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

install_kustomize() {
  if [ -x "$kustomize_bin" ] && [ "$("$kustomize_bin" version 2>/dev/null)" = "$KUSTOMIZE_VERSION" ]
  then
    return 0
  fi
  command -v go >/dev/null || die "Go is required to install kustomize from the Go module proxy"
  log "installing kustomize $KUSTOMIZE_VERSION into $cache/bin (go install)"
  mkdir -p "$cache/bin"
  GOBIN="$cache/bin" go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
  [ "$("$kustomize_bin" version)" = "$KUSTOMIZE_VERSION" ] || die "kustomize version mismatch"
}

# A Java runtime of major version 21 or newer: JAVA_HOME, PATH, then /usr/lib/jvm/*.
java21() {
  local candidate major
  for candidate in ${JAVA_HOME:+"$JAVA_HOME/bin/java"} "$(command -v java || true)" \
    /usr/lib/jvm/*/bin/java; do
    [ -n "$candidate" ] && [ -x "$candidate" ] || continue
    major=$("$candidate" -XshowSettings:properties -version 2>&1 \
      | sed -n 's/^ *java.specification.version = \([0-9]*\).*/\1/p')
    if [ -n "$major" ] && [ "$major" -ge 21 ]; then
      printf '%s\n' "$candidate"
      return 0
    fi
  done
  return 1
}

install_strimzi_crds() {
  local stamp="$strimzi_crds/.complete" libs="$cache/strimzi-$STRIMZI_VERSION/libs" java
  if [ -f "$stamp" ] && [ "$stamp" -nt "$here/schemas/strimzi/pom.xml" ]; then
    return 0
  fi
  command -v mvn >/dev/null || die "Maven (mvn) is required to fetch Strimzi from Maven Central"
  java=$(java21) || die "Strimzi's crd-generator $STRIMZI_VERSION needs Java 21 or newer; set \
JAVA_HOME to one (on this machine kind: /usr/lib/jvm/temurin-25-jdk-amd64)"
  log "generating Strimzi $STRIMZI_VERSION CRDs into $strimzi_crds (Maven Central, $java)"
  rm -rf "$libs" "$strimzi_crds"
  mkdir -p "$libs" "$strimzi_crds"
  mvn -q -B -Dstyle.color=never -f "$here/schemas/strimzi/pom.xml" \
    dependency:copy-dependencies -DoutputDirectory="$libs" -DincludeScope=runtime >&2
  # The arguments of api/pom.xml's generate-crd-co-install-v1 execution, for the kinds we use.
  "$java" -cp "$libs/*" io.strimzi.crdgenerator.CrdGenerator \
    --label app:strimzi --label strimzi.io/crd-install:true --target-kube 1.16+ \
    --crd-api-version v1 --api-versions v1 --storage-version v1 --yaml \
    "io.strimzi.api.kafka.model.kafka.Kafka=$strimzi_crds/040-Crd-kafka.yaml" \
    "io.strimzi.api.kafka.model.topic.KafkaTopic=$strimzi_crds/043-Crd-kafkatopic.yaml" \
    "io.strimzi.api.kafka.model.user.KafkaUser=$strimzi_crds/044-Crd-kafkauser.yaml" \
    "io.strimzi.api.kafka.model.nodepool.KafkaNodePool=$strimzi_crds/045-Crd-kafkanodepool.yaml"
  touch "$stamp"
}

install_prometheus_operator_crds() {
  local stamp="$promop_crds/.complete" module_dir="$here/schemas/prometheus-operator"
  if [ -f "$stamp" ] && [ "$stamp" -nt "$module_dir/go.mod" ]; then
    return 0
  fi
  command -v go >/dev/null || die "Go is required to generate the Prometheus Operator CRDs"
  log "generating Prometheus Operator $PROMETHEUS_OPERATOR_VERSION CRDs into $promop_crds"
  rm -rf "$promop_crds"
  mkdir -p "$promop_crds"
  (cd "$module_dir" && go tool controller-gen crd:crdVersions=v1 \
    "paths=$PROMETHEUS_OPERATOR_MODULE/v1" "output:crd:dir=$promop_crds")
  touch "$stamp"
}

install_cert_manager_crds() {
  local stamp="$certmanager_crds/.complete" module_dir="$here/schemas/cert-manager" dir crd
  if [ -f "$stamp" ] && [ "$stamp" -nt "$module_dir/go.mod" ]; then
    return 0
  fi
  command -v go >/dev/null || die "Go is required to fetch the cert-manager CRDs"
  log "fetching cert-manager $CERT_MANAGER_VERSION CRDs into $certmanager_crds (Go module proxy)"
  # The version go.mod requires, verified against go.sum; prints where the module was extracted.
  dir=$(cd "$module_dir" && go mod download -json "$CERT_MANAGER_MODULE" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
  [ -n "$dir" ] && [ -d "$dir/deploy/crds" ] || die "no deploy/crds in $CERT_MANAGER_MODULE"
  rm -rf "$certmanager_crds"
  mkdir -p "$certmanager_crds"
  for crd in cert-manager.io_issuers.yaml cert-manager.io_certificates.yaml; do
    [ -f "$dir/deploy/crds/$crd" ] || die "$CERT_MANAGER_MODULE has no deploy/crds/$crd"
    cp "$dir/deploy/crds/$crd" "$certmanager_crds/$crd"
  done
  chmod u+w "$certmanager_crds"/*.yaml   # the module cache is read-only
  touch "$stamp"
}

case ${1:-install} in
  install)
    install_kustomize
    install_strimzi_crds
    install_prometheus_operator_crds
    install_cert_manager_crds
    ;;
  env)
    printf 'KUSTOMIZE=%s\nSTRIMZI_CRDS=%s\nPROMETHEUS_OPERATOR_CRDS=%s\nCERT_MANAGER_CRDS=%s\n' \
      "$kustomize_bin" "$strimzi_crds" "$promop_crds" "$certmanager_crds"
    ;;
  kustomize) printf '%s\n' "$kustomize_bin" ;;
  *) die "usage: tools.sh [install|env|kustomize]" ;;
esac
