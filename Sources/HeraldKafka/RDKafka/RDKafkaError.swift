import CRdKafka

extension KafkaError {
    /// Maps a librdkafka error code to Herald's stable codes.
    init(rdkafka error: rd_kafka_resp_err_t, context: String) {
        let code: Code
        var retriable = false
        switch error {
        case RD_KAFKA_RESP_ERR__QUEUE_FULL:
            code = .queueFull
            retriable = true
        case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
            code = .messageTooLarge
        case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
            code = .deliveryTimedOut
            retriable = true
        case RD_KAFKA_RESP_ERR__TIMED_OUT, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
            code = .timedOut
            retriable = true
        case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC, RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION,
            RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
            code = .unknownTopicOrPartition
        case RD_KAFKA_RESP_ERR__PURGE_QUEUE, RD_KAFKA_RESP_ERR__PURGE_INFLIGHT:
            code = .purged
            retriable = true
        case RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, RD_KAFKA_RESP_ERR__RESOLVE,
            RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
            RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS, RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE:
            code = .transport
            retriable = true
        case RD_KAFKA_RESP_ERR__AUTHENTICATION, RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED,
            RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
            RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
            code = .authorization
        case RD_KAFKA_RESP_ERR__FATAL:
            code = .fatal
        case RD_KAFKA_RESP_ERR__INVALID_ARG:
            code = .configuration
        case RD_KAFKA_RESP_ERR__DESTROY, RD_KAFKA_RESP_ERR__STATE:
            code = .closed
        default:
            code = .broker
        }
        let description = String(cString: rd_kafka_err2str(error))
        self.init(
            code: code,
            message: "\(context): \(description)",
            librdkafkaCode: error.rawValue,
            isFatal: error == RD_KAFKA_RESP_ERR__FATAL,
            isRetriable: retriable
        )
    }

    /// Takes ownership of an `rd_kafka_error_t` and destroys it.
    init(consuming error: OpaquePointer, context: String) {
        defer { rd_kafka_error_destroy(error) }
        self.init(rdkafka: rd_kafka_error_code(error), context: context)
        message = "\(context): \(String(cString: rd_kafka_error_string(error)))"
        isFatal = rd_kafka_error_is_fatal(error) != 0
        isRetriable = isRetriable || rd_kafka_error_is_retriable(error) != 0
    }
}

extension KafkaError {
    /// The group coordinator refused the request because the group is rebalancing.
    var isRebalanceInProgress: Bool {
        librdkafkaCode == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS.rawValue
    }
}
