import CRdKafka

/// Builds librdkafka configuration objects; the only place property values meet C.
enum RDKafkaConfig {
    /// Creates an `rd_kafka_conf_t` with `properties` applied in order (later ones win).
    ///
    /// - Throws: ``KafkaError`` with code `.configuration` naming the rejected property. The value is
    ///   included only when the property is not a secret.
    static func make(_ properties: [(String, String)], role: String) throws(KafkaError) -> OpaquePointer {
        let conf = rd_kafka_conf_new()!
        for (key, value) in properties {
            if let reason = set(key, value, on: conf) {
                rd_kafka_conf_destroy(conf)
                throw KafkaError.configuration("kafka \(role) property '\(key)': \(reason)")
            }
        }
        return conf
    }

    /// Sets one property on `conf`: `nil` if librdkafka accepts it, or why not (without the value
    /// of a secret property).
    static func set(_ key: String, _ value: String, on conf: OpaquePointer) -> String? {
        var errorBuffer = [CChar](repeating: 0, count: 512)
        let result = rd_kafka_conf_set(conf, key, value, &errorBuffer, errorBuffer.count)
        guard result != RD_KAFKA_CONF_OK else { return nil }
        if KafkaClientOptions.isSecret(key) {
            return result == RD_KAFKA_CONF_UNKNOWN ? "unknown property" : "invalid value (not shown: secret)"
        }
        return String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Creates a client handle, taking ownership of `conf`.
    static func makeHandle(
        type: rd_kafka_type_t,
        conf: OpaquePointer,
        role: String
    ) throws(KafkaError) -> OpaquePointer {
        var errorBuffer = [CChar](repeating: 0, count: 512)
        guard let handle = rd_kafka_new(type, conf, &errorBuffer, errorBuffer.count) else {
            rd_kafka_conf_destroy(conf)
            let reason = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw KafkaError.configuration("kafka \(role): \(reason)")
        }
        return handle
    }
}
