#!/usr/bin/env bash
# Local Apache Kafka for development and tests, without Docker.
#
# The broker comes from Maven Central (deploy/local/pom.xml) into a cache outside git, and runs in
# KRaft combined mode (each node is both broker and controller) straight from the jars:
#   java -cp 'libs/*' kafka.Kafka server.properties     after     kafka.tools.StorageTool format
#
#   kafka.sh install                 fetch the jars (idempotent; fast when cached)
#   kafka.sh up | down | status      one node on 127.0.0.1:9092 (KAFKA_PORT changes the port;
#                                    the controller listens on the port after it; KAFKA_HOST
#                                    the address it listens on and advertises;
#                                    KAFKA_SITE_LISTENER/KAFKA_SITE_ADVERTISED a remote site's)
#   kafka.sh reset                   stop it and delete its data (every topic): a broker that
#                                    many test runs filled starts slowly
#   kafka.sh cluster-up | cluster-down | cluster-status
#                                    three nodes on 127.0.0.1:9192,9292,9392 (RF 3, min ISR 2)
#   kafka.sh kill NODE | start NODE  fault tests: SIGKILL / restart cluster node 1, 2 or 3
#   kafka.sh pause NODE | resume NODE
#                                    fault tests: SIGSTOP / SIGCONT cluster node 1, 2 or 3 (a
#                                    frozen VM, a long GC)
#   kafka.sh secure-cluster-up | secure-cluster-down | secure-cluster-status | secure-cluster-reset
#                                    three nodes with TLS, SCRAM users and ACLs (what production
#                                    runs): SASL_SSL on 127.0.0.1:9194,9294,9394, state and
#                                    client-<user>.env files in .run/kafka/secure; reset deletes
#                                    the data (passwords and certificate are kept)
#   kafka.sh secure-env USER         print USER's client settings (KAFKA_* variables to source)
#   kafka.sh secure-acls             list the secure cluster's ACLs
#   kafka.sh bootstrap [cluster|secure]  print the bootstrap servers
#
# Environment: JACKPOT_CACHE (default ~/.cache/jackpot) holds the jars; JACKPOT_STATE (default
# <repo>/.run) holds data, logs and pid files. KAFKA_HEAP_OPTS overrides the 512 MB heap (384 MB
# on the secure cluster). KAFKA_SECURE_PKI_DIR: the CA and broker certificate of the secure
# cluster (default .run/kafka/secure/pki, made with `jackpot pki issue` when missing).
# KAFKA_JVM_OPTS: more options for the broker JVMs (the fault suite's -XX:TieredStopAtLevel=1
# halves a broker's start on a loaded two-core machine, 16 s against 30-37 s for the cluster).
# KAFKA_STOP_SECONDS (default 30): a stop (down, cluster-down, ...) sends SIGTERM (a controlled
# shutdown) and SIGKILLs the brokers still running after this long, saying so; the fault suite
# uses 10 (a controlled shutdown of three brokers took 29.8 s on a slow machine).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")
cache=${JACKPOT_CACHE:-$HOME/.cache/jackpot}
libs="$cache/kafka-$kafka_version/libs"
state=${JACKPOT_STATE:-$repo/.run}
heap=${KAFKA_HEAP_OPTS:--Xms128m -Xmx512m}
ready_timeout=${KAFKA_READY_TIMEOUT:-90}
single_port=${KAFKA_PORT:-9092}
single_host=${KAFKA_HOST:-127.0.0.1}

single_dir="$state/kafka/single-${KAFKA_PORT:-9092}"
cluster_dir="$state/kafka/cluster"

log() { printf 'kafka.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# install: the jars of deploy/local/pom.xml in the shared cache, once per pom content (its
# SHA-256 is the marker). Fetched into a directory of its own and renamed into place under a lock:
# every checkout on the machine (clones, worktrees) shares the cache, and brokers running from it
# must never see their jars deleted by another checkout's first start (a pom merely newer on disk,
# as a fresh clone's is, once made every checkout fetch again over the running brokers' jars).
install() {
  local want fresh
  want=$(sha256sum "$here/pom.xml" | cut -d' ' -f1)
  [ "$(cat "$libs/.complete" 2>/dev/null)" = "$want" ] && return 0
  mkdir -p "$(dirname "$libs")"
  exec 8>"$libs.lock"
  flock 8
  if [ "$(cat "$libs/.complete" 2>/dev/null)" != "$want" ]; then
    command -v mvn >/dev/null || die "Maven (mvn) is required to fetch Kafka from Maven Central"
    command -v java >/dev/null || die "a Java 17+ runtime is required to run Kafka"
    log "fetching Apache Kafka $kafka_version from Maven Central into $libs"
    fresh="$libs.fetching"
    rm -rf "$fresh"
    mkdir -p "$fresh"
    mvn -q -B -Dstyle.color=never -f "$here/pom.xml" dependency:copy-dependencies \
      -DoutputDirectory="$fresh" -DincludeScope=runtime
    echo "$want" >"$fresh/.complete"
    rm -rf "$libs.previous"
    [ -d "$libs" ] && mv "$libs" "$libs.previous"  # a broker still running keeps its jars
    mv "$fresh" "$libs"
  fi
  flock -u 8
  exec 8>&-
}

java_cp() { printf '%s/*' "$libs"; }

# pid of the broker JVM whose data lives in $1, or nothing
node_pid() {
  pgrep -f -- "-Djackpot.kafka.node=$1 " 2>/dev/null | head -n 1 || true
}

port_open() { (exec 3<>"/dev/tcp/${2:-127.0.0.1}/$1") 2>/dev/null; }  # PORT [HOST]

# write_config DIR NODE_ID BROKER_PORT CONTROLLER_PORT VOTERS REPLICAS MIN_ISR [HOST]
write_config() {
  local dir=$1 id=$2 bport=$3 cport=$4 voters=$5 rf=$6 isr=$7 host=${8:-127.0.0.1}
  mkdir -p "$dir/data" "$dir/logs"
  cat >"$dir/server.properties" <<EOF
# Generated by deploy/local/kafka.sh; edits are overwritten at the next start.
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
listeners=PLAINTEXT://$host:$bport,CONTROLLER://$host:$cport
advertised.listeners=PLAINTEXT://$host:$bport
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
default.replication.factor=$rf
min.insync.replicas=$isr
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
transaction.state.log.num.partitions=8
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
# The pot and payout services run 3 s consumer-group sessions so a killed instance's partitions
# move within seconds (safe: every partition's transactional id fences its previous owner).
group.min.session.timeout.ms=1000
auto.create.topics.enable=false
log.retention.hours=168
log.segment.bytes=67108864
num.io.threads=4
num.network.threads=2
EOF
}

# site_listener DIR: with KAFKA_SITE_LISTENER=HOST:PORT and KAFKA_SITE_ADVERTISED=HOST:PORT, a
# second listener (SITE) that advertises another address: a remote site's clients reach the
# broker through a WAN proxy there (loadtest/wan.py), and reconnect through it after metadata.
site_listener() {
  local dir=$1
  [ -n "${KAFKA_SITE_LISTENER:-}" ] || return 0
  [ -n "${KAFKA_SITE_ADVERTISED:-}" ] || die "KAFKA_SITE_LISTENER needs KAFKA_SITE_ADVERTISED"
  sed -i -e "s|^listeners=\(.*\)|listeners=\1,SITE://$KAFKA_SITE_LISTENER|" \
    -e "s|^advertised.listeners=\(.*\)|advertised.listeners=\1,SITE://$KAFKA_SITE_ADVERTISED|" \
    -e "s|^listener.security.protocol.map=\(.*\)|listener.security.protocol.map=\1,SITE:PLAINTEXT|" \
    "$dir/server.properties"
}

# start_node DIR CLUSTER_ID BROKER_PORT [HOST]: format once, start, wait until it answers
start_node() {
  local dir=$1 cluster_id=$2 bport=$3 host=${4:-127.0.0.1} pid
  pid=$(node_pid "$dir")
  if [ -n "$pid" ]; then
    log "node in $dir already running (pid $pid)"
    wait_ready "$dir" "$bport" "$pid" -1 "$host"  # its "started" line may be in a rolled log
    return 0
  fi
  if port_open "$bport" "$host"; then
    die "port $bport is taken by a process that is not this project's broker; stop it or set KAFKA_BOOTSTRAP_SERVERS"
  fi
  rm -f "$dir/kafka.pid"
  if [ ! -f "$dir/data/meta.properties" ]; then
    # Eligible Leader Replicas (KIP-966, on by default in 4.x) make the broker answer
    # NOT_ENOUGH_REPLICAS spuriously; aiokafka's transactional producer then retried a batch and
    # the ledger got a record twice (seen here, and reported as aio-libs/aiokafka#1172).
    java -cp "$(java_cp)" -Dlog4j2.configurationFile="$here/log4j2.xml" -Dkafka.logs.dir="$dir/logs" \
      kafka.tools.StorageTool format --cluster-id="$cluster_id" --config "$dir/server.properties" \
      --feature eligible.leader.replicas.version=0 ${format_args[@]+"${format_args[@]}"} \
      >"$dir/logs/format.log" 2>&1 \
      || { cat "$dir/logs/format.log" >&2; die "formatting $dir failed"; }
  fi
  local start_at=0  # where this start's lines begin in server.log (bytes)
  [ -f "$dir/logs/server.log" ] && start_at=$(stat -c %s "$dir/logs/server.log")
  # shellcheck disable=SC2086
  setsid nohup java $heap ${KAFKA_JVM_OPTS:-} -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true \
    -Djackpot.kafka.node="$dir" \
    -Dlog4j2.configurationFile="$here/log4j2.xml" -Dkafka.logs.dir="$dir/logs" \
    -cp "$(java_cp)" kafka.Kafka "$dir/server.properties" >"$dir/logs/stdout.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$dir/kafka.pid"
  wait_ready "$dir" "$bport" "$pid" "$start_at" "$host"
}

# wait_ready DIR PORT PID LOG_BYTE [HOST]: poll the server log from LOG_BYTE on and the port,
# never a fixed sleep (LOG_BYTE -1: a node already running, the port alone). The log rolls over
# at 50 MB (log4j2.xml): a log shorter than LOG_BYTE rolled over since, and is read from its start
# (a start that waited on the old offset never saw its "started" line and failed after the ready
# timeout; so did a node already running whose "started" line had rolled away).
wait_ready() {
  local dir=$1 port=$2 pid=$3 from=$4 host=${5:-127.0.0.1} t0=$SECONDS log="$1/logs/server.log"
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$log" "$dir/logs/stdout.log" >&2 2>/dev/null || true
      die "broker in $dir exited during start-up (logs above)"
    fi
    if [ -f "$log" ] && [ "$(stat -c %s "$log")" -lt "$from" ]; then from=0; fi
    if port_open "$port" "$host" && { [ "$from" -lt 0 ] || { [ -f "$log" ] \
      && tail -c "+$((from + 1))" "$log" | grep -c 'Kafka Server started' >/dev/null; }; }
    then  # grep -c reads to the end: grep -q would SIGPIPE tail and fail under pipefail
      log "broker ready on $host:$port (pid $pid, $((SECONDS - t0)) s)"
      return 0
    fi
    if [ $((SECONDS - t0)) -ge "$ready_timeout" ]; then
      tail -n 30 "$dir/logs/server.log" >&2 2>/dev/null || true
      die "broker in $dir not ready after ${ready_timeout}s"
    fi
    sleep 0.2
  done
}

# alive PID: some thread of the process has not exited. A SIGKILLed JVM's main thread turns
# zombie (Z) while its other threads are still exiting, and its sockets stay open until the last
# one has: a stop that looked at the main thread alone returned with a broker port still accepting
# connections (the fault suite then failed "brokers still reachable after the stop").
alive() {
  local status state
  for status in /proc/"$1"/task/*/status; do
    state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "$status" 2>/dev/null) || continue
    case "$state" in '' | Z | X) ;; *) return 0 ;; esac
  done
  return 1
}

# stop_nodes DIR...: SIGTERM all (controlled shutdown; SIGCONT first, a paused node would never
# see it), then SIGKILL those still running after KAFKA_STOP_SECONDS, and say which. Returns once
# every one has exited (a process SIGKILLed is gone within moments; a stop never waits for ever).
stop_nodes() {
  local dir pid pids=() names=() killed=() t0=$SECONDS bound=${KAFKA_STOP_SECONDS:-30} n running
  [[ "$bound" =~ ^[0-9]+$ ]] || die "KAFKA_STOP_SECONDS must be whole seconds, not '$bound'"
  for dir in "$@"; do
    pid=$(node_pid "$dir")
    if [ -n "$pid" ]; then
      kill -CONT "$pid" 2>/dev/null || true
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid"); names+=("$(basename "$dir")")
    fi
    rm -f "$dir/kafka.pid"
  done
  [ ${#pids[@]} -gt 0 ] || { log "not running"; return 0; }
  while :; do
    running=0
    for pid in "${pids[@]}"; do alive "$pid" && running=1; done
    [ "$running" = 1 ] && [ $((SECONDS - t0)) -lt "$bound" ] || break
    sleep 0.1
  done
  for n in "${!pids[@]}"; do
    pid=${pids[$n]}
    alive "$pid" || continue
    kill -KILL "$pid" 2>/dev/null || true
    killed+=("${names[$n]} (pid $pid)")
  done
  for pid in "${pids[@]}"; do
    while alive "$pid"; do sleep 0.05; done
  done
  if [ ${#killed[@]} -gt 0 ]; then
    log "killed after the ${bound} s stop bound: ${killed[*]}"
  fi
  log "stopped (${#pids[@]} node(s), $((SECONDS - t0)) s, ${#killed[@]} killed)"
}

cluster_id_for() {
  local file=$1
  if [ ! -f "$file" ]; then
    mkdir -p "$(dirname "$file")"
    python3 -c 'import base64,uuid;print(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))' >"$file"
  fi
  cat "$file"
}

cluster_voters="1@127.0.0.1:9193,2@127.0.0.1:9293,3@127.0.0.1:9393"

cluster_node() { # cluster_node N -> configure node N of the three-node cluster
  local n=$1
  write_config "$cluster_dir/node$n" "$n" "9${n}92" "9${n}93" "$cluster_voters" 3 2
}

start_cluster_node() {
  local n=$1 id
  install
  id=$(cluster_id_for "$cluster_dir/cluster.id")
  cluster_node "$n"
  start_node "$cluster_dir/node$n" "$id" "9${n}92"
}

# ---------------------------------------------------------------- the secure cluster (issue 9)
# Three nodes as above, secured the way production is (deploy/k8s/base/kafka/kafka.yaml):
#   CLIENT     127.0.0.1:9N94  SASL_SSL, SCRAM-SHA-512: services, tools, tests
#   INTERNAL   127.0.0.1:9N95  SSL, client certificate required: replication between brokers
#   CONTROLLER 127.0.0.1:9N96  SSL, client certificate required: KRaft quorum, broker heartbeats
# Every listener presents the development CA's "kafka" certificate (ECDSA P-256, PEM keystore);
# on the SSL listeners a certificate's CN is the principal, so the brokers are User:kafka.
# StandardAuthorizer, no ACL means denied; super users User:kafka and User:admin. The SCRAM users
# exist before any broker starts (StorageTool format --add-scram); the ACLs are exactly
# deploy/k8s/access.yaml's (kafka-acls, run as admin), and admin creates every topic of
# jackpot.topics (the Topic Operator's job in production): no service may create a topic.
secure_dir="$state/kafka/secure"
secure_pki=${KAFKA_SECURE_PKI_DIR:-$secure_dir/pki}
secure_users=(admin jackpot-pot jackpot-gateway jackpot-payout jackpot-display jackpot-audit)
secure_mechanism=SCRAM-SHA-512
secure_voters="1@127.0.0.1:9196,2@127.0.0.1:9296,3@127.0.0.1:9396"
secure_bootstrap="127.0.0.1:9194,127.0.0.1:9294,127.0.0.1:9394"
access_yaml="$repo/deploy/k8s/access.yaml"
venv="$repo/.venv/bin"

secure_password() { sed -n "s/^$1=//p" "$secure_dir/passwords" 2>/dev/null || true; }  # USER

# secure_credentials: the broker certificate and one password per user, made once and kept;
# client-<user>.env (to source) and client-<user>.properties (Java tools) written every time.
secure_credentials() {
  local user password extra
  [ -x "$venv/jackpot" ] || die "the project's virtualenv is missing: run make setup"
  mkdir -p "$secure_dir"
  if [ ! -f "$secure_pki/kafka.pem" ] || [ ! -f "$secure_pki/ca.crt" ]; then
    "$venv/jackpot" pki issue --dir "$secure_pki" --name kafka --role service \
      --host localhost --host 127.0.0.1 >/dev/null
    log "broker certificate CN=kafka issued by the development CA in $secure_pki"
  fi
  (umask 077 && touch "$secure_dir/passwords")
  chmod 600 "$secure_dir/passwords"
  for user in "${secure_users[@]}"; do
    [ -z "$(secure_password "$user")" ] || continue
    if [ -f "$secure_dir/node1/data/meta.properties" ]; then
      die "no password for $user, but the cluster was formatted without it: kafka.sh secure-cluster-reset"
    fi
    password=$(python3 -c 'import secrets; print(secrets.token_hex(20))')
    printf '%s=%s\n' "$user" "$password" >>"$secure_dir/passwords"
  done
  for user in "${secure_users[@]}"; do
    password=$(secure_password "$user")
    case "$user" in  # the topics exist already and these users may not create any
      jackpot-pot) extra="export JACKPOT_CREATE_TOPICS=false" ;;
      jackpot-payout) extra="export JACKPOT_PAYOUT_CREATE_TOPICS=false" ;;
      *) extra="" ;;
    esac
    (
      umask 077
      cat >"$secure_dir/client-$user.env" <<ENV
# $user on the local secure Kafka cluster (deploy/local/kafka.sh secure-cluster-up); source it.
export KAFKA_BOOTSTRAP_SERVERS=$secure_bootstrap
export KAFKA_SECURITY_PROTOCOL=SASL_SSL
export KAFKA_SASL_MECHANISM=$secure_mechanism
export KAFKA_SASL_USERNAME=$user
export KAFKA_SASL_PASSWORD=$password
export KAFKA_SSL_CAFILE=$secure_pki/ca.crt
$extra
ENV
      cat >"$secure_dir/client-$user.properties" <<PROPS
# $user on the local secure Kafka cluster, for the Java tools (--command-config, --consumer.config)
bootstrap.servers=$secure_bootstrap
security.protocol=SASL_SSL
sasl.mechanism=$secure_mechanism
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$user" password="$password";
ssl.truststore.type=PEM
ssl.truststore.location=$secure_pki/ca.crt
PROPS
    )
  done
}

secure_node() { # secure_node N -> configure node N of the secure cluster
  local n=$1 dir="$secure_dir/node$1"
  write_config "$dir" "$n" "9${n}94" "9${n}96" "$secure_voters" 3 2
  sed -i -e '/^listeners=/d' -e '/^advertised\.listeners=/d' -e '/^controller\.listener\.names=/d' \
    -e '/^inter\.broker\.listener\.name=/d' -e '/^listener\.security\.protocol\.map=/d' \
    "$dir/server.properties"
  cat >>"$dir/server.properties" <<PROPS
# Secure cluster (kafka.sh secure-cluster-up): listeners, TLS, SCRAM, authorization.
listeners=CLIENT://127.0.0.1:9${n}94,INTERNAL://127.0.0.1:9${n}95,CONTROLLER://127.0.0.1:9${n}96
advertised.listeners=CLIENT://127.0.0.1:9${n}94,INTERNAL://127.0.0.1:9${n}95
controller.listener.names=CONTROLLER
inter.broker.listener.name=INTERNAL
listener.security.protocol.map=CLIENT:SASL_SSL,INTERNAL:SSL,CONTROLLER:SSL
ssl.keystore.type=PEM
ssl.keystore.location=$secure_pki/kafka.pem
ssl.truststore.type=PEM
ssl.truststore.location=$secure_pki/ca.crt
ssl.endpoint.identification.algorithm=https
listener.name.internal.ssl.client.auth=required
listener.name.controller.ssl.client.auth=required
ssl.principal.mapping.rules=RULE:^(.*,)?CN=([^,]+)(,.*)?\$/\$2/,DEFAULT
sasl.enabled.mechanisms=$secure_mechanism
listener.name.client.sasl.enabled.mechanisms=$secure_mechanism
listener.name.client.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=User:kafka;User:admin
PROPS
}

secure_tool() { # secure_tool CLASS ARGS...: a Kafka command-line tool, as admin
  mkdir -p "$secure_dir/logs"
  java -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$here/log4j2.xml" -Dkafka.logs.dir="$secure_dir/logs" \
    -cp "$(java_cp)" "$1" --bootstrap-server "$secure_bootstrap" \
    --command-config "$secure_dir/client-admin.properties" "${@:2}"
}

# secure_acls: deploy/k8s/access.yaml's grants, added once per version of that file (grants
# removed from it stay until `kafka.sh secure-cluster-reset`).
secure_acls() {
  local stamp="$secure_dir/acls.applied" want calls line count=0 t0=$SECONDS
  local -a args
  want=$(cat "$access_yaml" "$here/kafka_secure.py" | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  calls=$("$venv/python" "$here/kafka_secure.py" acls "$access_yaml") \
    || die "cannot read $access_yaml"
  mkdir -p "$secure_dir/logs"
  while IFS= read -r line; do
    IFS=$'\t' read -r -a args <<<"$line"
    secure_tool org.apache.kafka.tools.AclCommand "${args[@]}" >>"$secure_dir/logs/acls.log" 2>&1 \
      || { tail -n 20 "$secure_dir/logs/acls.log" >&2; die "kafka-acls ${args[*]} failed"; }
    count=$((count + 1))
  done <<<"$calls"
  echo "$want" >"$stamp"
  log "ACLs of deploy/k8s/access.yaml added ($count kafka-acls calls, $((SECONDS - t0)) s)"
}

secure_topics() { # every topic of jackpot.topics, RF 3, created by admin through KafkaSecurity
  "$venv/python" "$here/kafka_secure.py" topics "$secure_dir/client-admin.env" 3 \
    || die "creating the topics as admin failed"
}

secure_cluster_up() {
  local id n job fail=0 user
  install
  heap=${KAFKA_HEAP_OPTS:--Xms128m -Xmx384m}
  secure_credentials
  id=$(cluster_id_for "$secure_dir/cluster.id")
  format_args=()
  for user in "${secure_users[@]}"; do
    format_args+=(--add-scram "$secure_mechanism=[name=$user,password=$(secure_password "$user")]")
  done
  for n in 1 2 3; do
    secure_node "$n"
    ( start_node "$secure_dir/node$n" "$id" "9${n}94" ) &
  done
  for job in $(jobs -p); do wait "$job" || fail=1; done
  [ "$fail" = 0 ] || die "secure cluster start failed"
  secure_acls
  secure_topics
  log "secure cluster ready: SASL_SSL $secure_mechanism on $secure_bootstrap, CA $secure_pki/ca.crt"
  echo "secure cluster: SASL_SSL/$secure_mechanism $secure_bootstrap ca=$secure_pki/ca.crt users=$(IFS=,; echo "${secure_users[*]}")"
  echo ". $secure_dir/client-<user>.env   # one user's KAFKA_* settings (Java tools: client-<user>.properties)"
}

secure_cluster_status() { # exit 3 unless all three nodes run
  local n pid running=0
  for n in 1 2 3; do
    pid=$(node_pid "$secure_dir/node$n")
    if [ -n "$pid" ]; then
      echo "node$n running pid=$pid port=9${n}94 (SASL_SSL)"
      running=$((running + 1))
    else
      echo "node$n stopped port=9${n}94 (SASL_SSL)"
    fi
  done
  [ "$running" = 3 ] || exit 3
}

cmd=${1:-}
case "$cmd" in
  install) install ;;
  up)
    install
    write_config "$single_dir" 1 "$single_port" "$((single_port + 1))" \
      "1@$single_host:$((single_port + 1))" 1 1 "$single_host"
    site_listener "$single_dir"
    start_node "$single_dir" "$(cluster_id_for "$single_dir/cluster.id")" "$single_port" "$single_host"
    ;;
  down) stop_nodes "$single_dir" ;;
  reset)
    # Every topic of the local broker goes: what many test runs left behind makes it slow to
    # start (thousands of partitions to load).
    stop_nodes "$single_dir"
    rm -rf "$single_dir/data" "$single_dir/cluster.id"
    log "local broker data deleted; the next 'up' starts empty"
    ;;
  status)
    pid=$(node_pid "$single_dir")
    if [ -n "$pid" ] && port_open "$single_port" "$single_host"; then
      echo "running pid=$pid bootstrap=$single_host:$single_port"
    else
      echo "stopped"; exit 3
    fi
    ;;
  cluster-up)
    install
    id=$(cluster_id_for "$cluster_dir/cluster.id")
    # The three controllers must see each other to elect a leader, so start them all before
    # waiting on any of them.
    for n in 1 2 3; do
      cluster_node "$n"
      ( start_node "$cluster_dir/node$n" "$id" "9${n}92" ) &
    done
    fail=0
    for job in $(jobs -p); do wait "$job" || fail=1; done
    [ "$fail" = 0 ] || die "cluster start failed"
    ;;
  cluster-down) stop_nodes "$cluster_dir/node1" "$cluster_dir/node2" "$cluster_dir/node3" ;;
  cluster-status)
    for n in 1 2 3; do
      pid=$(node_pid "$cluster_dir/node$n")
      if [ -n "$pid" ]; then echo "node$n running pid=$pid port=9${n}92"; else echo "node$n stopped port=9${n}92"; fi
    done
    ;;
  kill)
    n=${2:?node number 1-3}
    pid=$(node_pid "$cluster_dir/node$n")
    [ -n "$pid" ] || die "node $n is not running"
    kill -KILL "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    log "node $n killed (pid $pid)"
    ;;
  start) start_cluster_node "${2:?node number 1-3}" ;;
  pause | resume)
    n=${2:?node number 1-3}
    pid=$(node_pid "$cluster_dir/node$n")
    [ -n "$pid" ] || die "node $n is not running"
    if [ "$cmd" = pause ]; then kill -STOP "$pid"; else kill -CONT "$pid"; fi
    log "node $n ${cmd}d (pid $pid)"
    ;;
  secure-cluster-up) secure_cluster_up ;;
  secure-cluster-down) stop_nodes "$secure_dir/node1" "$secure_dir/node2" "$secure_dir/node3" ;;
  secure-cluster-status) secure_cluster_status ;;
  secure-cluster-reset)
    stop_nodes "$secure_dir/node1" "$secure_dir/node2" "$secure_dir/node3"
    rm -rf "$secure_dir/node1" "$secure_dir/node2" "$secure_dir/node3" "$secure_dir/cluster.id" \
      "$secure_dir/acls.applied"
    log "secure cluster data deleted; passwords and certificates in $secure_dir kept"
    ;;
  secure-env) cat "$secure_dir/client-${2:?user name}.env" ;;
  secure-acls) secure_tool org.apache.kafka.tools.AclCommand --list ;;
  bootstrap)
    if [ "${2:-}" = secure ]; then echo "$secure_bootstrap"; exit 0; fi
    if [ "${2:-}" = cluster ]; then echo "127.0.0.1:9192,127.0.0.1:9292,127.0.0.1:9392"; else echo "$single_host:$single_port"; fi
    ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; [ -z "$cmd" ] || exit 2 ;;
esac
