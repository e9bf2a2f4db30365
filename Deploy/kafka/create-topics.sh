#!/usr/bin/env bash
# Creates Herald's topics on a Kafka cluster: the compose file's init step, and usable by hand:
#   BOOTSTRAP=broker:9092 REPLICAS=3 Deploy/kafka/create-topics.sh
# The domain topics of the example catalog are created too (COMPOSE_DOMAIN_TOPICS=0 skips them).
set -euo pipefail
bootstrap="${BOOTSTRAP:-kafka:9092}"
replicas="${REPLICAS:-1}"
kafka_topics="${KAFKA_TOPICS:-/opt/kafka/bin/kafka-topics.sh}"

create() {
    local name=$1 partitions=$2; shift 2
    local configs=()
    for config in "$@"; do configs+=(--config "$config"); done
    "$kafka_topics" --bootstrap-server "$bootstrap" --create --if-not-exists --topic "$name" \
        --partitions "$partitions" --replication-factor "$replicas" "${configs[@]}"
}

# Recipients, one key per device, profile, preferences and token (docs/store.md): compacted, so a
# new worker can rebuild from it.
create herald.directory 12 cleanup.policy=compact min.compaction.lag.ms=3600000 segment.ms=86400000
# Provider calls; kept longer than the longest notification TTL.
create herald.outbound 12 retention.ms=604800000
# Retry after 10 s.
create herald.outbound.retry.1 12 retention.ms=86400000
# Retry after 1 min.
create herald.outbound.retry.2 12 retention.ms=86400000
# Retry after 10 min.
create herald.outbound.retry.3 12 retention.ms=86400000
# Retry after 1 h.
create herald.outbound.retry.4 12 retention.ms=259200000
# Provider calls that used up their retries: four weeks to inspect and re-drive.
create herald.outbound.dlq 3 retention.ms=2419200000
# Poison events: four weeks to inspect and re-drive.
create herald.events.dlq 3 retention.ms=2419200000
# One record per decision, for analytics (worker.decisions_topic).
create herald.decisions 12 retention.ms=604800000
# One record per provider answer, for analytics (sender.deliveries_topic).
create herald.deliveries 12 retention.ms=604800000

if [ "${COMPOSE_DOMAIN_TOPICS:-1}" = 1 ]; then
    for topic in orders.events payments.events security.events messages.events marketing.events; do
        create "$topic" 12 retention.ms=604800000
    done
fi
