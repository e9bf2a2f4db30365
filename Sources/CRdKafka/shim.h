#ifndef HERALD_CRDKAFKA_SHIM_H
#define HERALD_CRDKAFKA_SHIM_H

// librdkafka's public API and its mock cluster (both ship in Debian's librdkafka-dev).
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

// Swift cannot call C variadic functions, so the two variadic entry points Herald needs are wrapped
// here with fixed argument lists.

/// Produces one message to a topic handle (no lookup by name). `msgflags` is RD_KAFKA_MSG_F_COPY for a
/// payload librdkafka copies, or 0 for one it reads in place until the message's delivery report.
/// `headers` (may be NULL) is owned by librdkafka on success and must be destroyed by the caller
/// on failure. `timestamp` is the message's, in milliseconds since the epoch; 0 takes the clock's.
static inline rd_kafka_resp_err_t herald_produce_topic(rd_kafka_t *rk, rd_kafka_topic_t *topic, int32_t partition,
                                                       int msgflags, const void *key, size_t key_len,
                                                       const void *value, size_t value_len,
                                                       rd_kafka_headers_t *headers, int64_t timestamp,
                                                       void *opaque) {
    if (headers != NULL) {
        return rd_kafka_producev(rk, RD_KAFKA_V_RKT(topic), RD_KAFKA_V_PARTITION(partition),
                                 RD_KAFKA_V_MSGFLAGS(msgflags), RD_KAFKA_V_KEY(key, key_len),
                                 RD_KAFKA_V_VALUE((void *)value, value_len), RD_KAFKA_V_HEADERS(headers),
                                 RD_KAFKA_V_TIMESTAMP(timestamp), RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
    }
    return rd_kafka_producev(rk, RD_KAFKA_V_RKT(topic), RD_KAFKA_V_PARTITION(partition),
                             RD_KAFKA_V_MSGFLAGS(msgflags), RD_KAFKA_V_KEY(key, key_len),
                             RD_KAFKA_V_VALUE((void *)value, value_len), RD_KAFKA_V_TIMESTAMP(timestamp),
                             RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
}

/// The offset of RD_KAFKA_PARTITION_UA, which Swift does not import as a constant.
static inline int32_t herald_partition_unassigned(void) { return RD_KAFKA_PARTITION_UA; }

#endif
