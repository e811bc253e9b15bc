#!/bin/sh
# One Kafka node in KRaft combined mode (broker and controller), configured as
# deploy/local/kafka.sh configures its single local broker, for the container tests.
#
#   entrypoint.sh          write the configuration, format the storage unless formatted, run
#   entrypoint.sh format   format only (the image's build does, so a container starts one JVM,
#                          not two: the listeners' ports are no part of the formatted storage)
#
#   KAFKA_PORT        the broker's port (default 9092); the controller listens on the next one
#   KAFKA_HOST        the address it listens on and advertises (default 127.0.0.1: host network)
#   KAFKA_HEAP_OPTS   JVM heap (default -Xms128m -Xmx512m, as kafka.sh)
set -eu
port=${KAFKA_PORT:-9092}
cport=$((port + 1))
host=${KAFKA_HOST:-127.0.0.1}
heap=${KAFKA_HEAP_OPTS:--Xms128m -Xmx512m}
dir=/var/lib/kafka
libs='/opt/kafka/libs/*'
log4j=-Dlog4j2.configurationFile=/opt/kafka/log4j2.xml
mkdir -p "$dir/data"
cat >"$dir/server.properties" <<PROPERTIES
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$host:$cport
listeners=PLAINTEXT://$host:$port,CONTROLLER://$host:$cport
advertised.listeners=PLAINTEXT://$host:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=8
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=1000
auto.create.topics.enable=false
num.io.threads=4
num.network.threads=2
PROPERTIES
if [ ! -f "$dir/data/meta.properties" ]; then
  # Eligible Leader Replicas off, as kafka.sh formats (aio-libs/aiokafka#1172).
  cluster_id=$(python3 -c 'import base64,uuid;print(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))')
  java -cp "$libs" "$log4j" kafka.tools.StorageTool format --cluster-id="$cluster_id" \
    --config "$dir/server.properties" --feature eligible.leader.replicas.version=0 >/dev/null
fi
[ "${1:-}" != format ] || exit 0
# shellcheck disable=SC2086
exec java $heap -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true "$log4j" \
  -cp "$libs" kafka.Kafka "$dir/server.properties"
