import CRdKafka

/// Conversions between Swift partition sets and `rd_kafka_topic_partition_list_t`.
enum RDKafkaTopicPartitionList {
    /// Creates a list; the caller destroys it with `rd_kafka_topic_partition_list_destroy`.
    static func make(
        _ partitions: some Collection<TopicPartition>
    ) -> UnsafeMutablePointer<rd_kafka_topic_partition_list_t> {
        let list = rd_kafka_topic_partition_list_new(Int32(partitions.count))!
        for partition in partitions {
            rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition)
        }
        return list
    }

    /// Creates a list with offsets set.
    static func make(offsets: [TopicPartition: Int64]) -> UnsafeMutablePointer<rd_kafka_topic_partition_list_t> {
        let list = rd_kafka_topic_partition_list_new(Int32(offsets.count))!
        for (partition, offset) in offsets {
            rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition).pointee.offset = offset
        }
        return list
    }

    /// Runs `body` with a temporary list.
    static func with<R>(
        _ partitions: some Collection<TopicPartition>,
        _ body: (UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) throws -> R
    ) rethrows -> R {
        let list = make(partitions)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        return try body(list)
    }

    /// The partitions in a list.
    static func partitions(_ list: UnsafePointer<rd_kafka_topic_partition_list_t>) -> [TopicPartition] {
        (0..<Int(list.pointee.cnt)).map { index in
            let element = list.pointee.elems[index]
            return TopicPartition(String(cString: element.topic), element.partition)
        }
    }

    /// The partitions and offsets in a list, with each element's error if it has one.
    static func offsets(
        _ list: UnsafePointer<rd_kafka_topic_partition_list_t>
    ) -> [(TopicPartition, Int64, rd_kafka_resp_err_t)] {
        (0..<Int(list.pointee.cnt)).map { index in
            let element = list.pointee.elems[index]
            return (TopicPartition(String(cString: element.topic), element.partition), element.offset, element.err)
        }
    }
}
