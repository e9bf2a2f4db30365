import CRdKafka
import Logging

/// librdkafka's mock cluster and the client handle that hosts it.
final class RDKafkaMockCluster: @unchecked Sendable {
    // @unchecked: the mock cluster API is thread-safe (each call is an operation handed to the
    // cluster's own thread); the handles are destroyed only in deinit.
    private let host: OpaquePointer
    private let cluster: OpaquePointer
    private let contextPointer: UnsafeMutableRawPointer
    let bootstrapServers: String

    init(brokers: Int, logger: Logger) throws(KafkaError) {
        let conf = try RDKafkaConfig.make([("client.id", "herald-embedded-broker")], role: "embedded broker")
        let context = RDKafkaCallbackContext(logger: logger)
        contextPointer = context.install(on: conf)
        do {
            host = try RDKafkaConfig.makeHandle(type: RD_KAFKA_PRODUCER, conf: conf, role: "embedded broker")
        } catch {
            RDKafkaCallbackContext.release(contextPointer)
            throw error
        }
        guard let cluster = rd_kafka_mock_cluster_new(host, Int32(brokers)) else {
            rd_kafka_destroy(host)
            RDKafkaCallbackContext.release(contextPointer)
            throw KafkaError.configuration("embedded broker: could not start a mock cluster of \(brokers) brokers")
        }
        self.cluster = cluster
        bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
    }

    deinit {
        // Destroying the cluster joins its thread, which took a second each in a fifth of the test
        // suite's teardowns. A deinit runs wherever the last reference goes, often a task on the
        // cooperative pool (a test's end, `herald dev`'s), whose thread that second would hold.
        let handles = Handles(host: host, cluster: cluster, context: contextPointer)
        DedicatedThread.start(name: "herald.mock-stop") {
            rd_kafka_mock_cluster_destroy(handles.cluster)
            rd_kafka_destroy(handles.host)
            RDKafkaCallbackContext.release(handles.context)
        }
    }

    /// The handles, for the thread that destroys them.
    private struct Handles: @unchecked Sendable {
        // @unchecked: used by that one thread, after the cluster object is gone.
        let host: OpaquePointer
        let cluster: OpaquePointer
        let context: UnsafeMutableRawPointer
    }

    func createTopic(_ name: String, partitions: Int, replicationFactor: Int) throws(KafkaError) {
        let error = rd_kafka_mock_topic_create(cluster, name, Int32(partitions), Int32(replicationFactor))
        if error != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw KafkaError(rdkafka: error, context: "embedded broker: create topic \(name)")
        }
    }

    func setBroker(_ id: Int32, up: Bool) throws(KafkaError) {
        let error = up ? rd_kafka_mock_broker_set_up(cluster, id) : rd_kafka_mock_broker_set_down(cluster, id)
        if error != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw KafkaError(rdkafka: error, context: "embedded broker: set broker \(id) \(up ? "up" : "down")")
        }
    }

    func setRoundTripTime(_ id: Int32, milliseconds: Int) throws(KafkaError) {
        let error = rd_kafka_mock_broker_set_rtt(cluster, id, Int32(milliseconds))
        if error != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw KafkaError(rdkafka: error, context: "embedded broker: set rtt of broker \(id)")
        }
    }

    func pushRequestErrors(apiKey: Int16, errorCodes: [Int32]) {
        var errors = errorCodes.map { rd_kafka_resp_err_t(rawValue: $0) }
        rd_kafka_mock_push_request_errors_array(cluster, apiKey, errors.count, &errors)
    }
}
