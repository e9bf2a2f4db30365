import HeraldKafka
import Synchronization

/// What `/health/ready` answers: ready once the worker holds partitions and its store answered the
/// last time it was asked.
public final class WorkerReadiness: Sendable {
    private struct State {
        var partitions: Set<TopicPartition> = []
        var storeAnswers = true
    }

    private let state = Mutex(State())

    public init() {}

    func assigned(_ partitions: [TopicPartition]) { state.withLock { $0.partitions.formUnion(partitions) } }

    func revoked(_ partitions: [TopicPartition]) { state.withLock { $0.partitions.subtract(partitions) } }

    func storeAnswered(_ answered: Bool) { state.withLock { $0.storeAnswers = answered } }

    public var assignedPartitions: Int { state.withLock { $0.partitions.count } }

    /// Whether the store answered the last time the worker asked.
    public var storeAnswers: Bool { state.withLock { $0.storeAnswers } }

    public var isReady: Bool { state.withLock { !$0.partitions.isEmpty && $0.storeAnswers } }
}
