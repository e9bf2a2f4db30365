import CRdKafka

/// The librdkafka the process runs with (the system's, found at load time, which need not be the
/// one Herald was built against): its behaviour differs by version (see README, "Honest limits").
public enum Librdkafka {
    /// Its version, such as `2.0.2`.
    public static var version: String { String(cString: rd_kafka_version_str()) }
}
