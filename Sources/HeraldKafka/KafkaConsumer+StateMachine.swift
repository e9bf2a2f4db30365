import DequeModule

extension KafkaConsumer {
    /// The consumer's shared state: the buffer between the poll thread and the application, the
    /// offset trackers, pauses and lifecycle. Every method runs under the consumer's lock and returns
    /// what to do outside it.
    struct StateMachine: Sendable {
        enum Lifecycle: Sendable, Equatable {
            case initial
            case running
            case draining
            case closed
        }

        let maxBatchSize: Int
        let maxBufferedMessages: Int

        private(set) var lifecycle = Lifecycle.initial
        private(set) var shutdownRequested = false
        private(set) var failure: KafkaError?
        private var buffer: Deque<[KafkaMessage]> = []
        private(set) var bufferedCount = 0
        private(set) var trackers: [TopicPartition: OffsetTracker] = [:]
        private var revoking: Set<TopicPartition> = []
        /// The epoch the next assigned partition's tracker gets.
        private var nextEpoch = 0
        private(set) var userPaused: Set<TopicPartition> = []
        private var flow = Flow.flowing
        /// How long the buffer may stay full before fetching is paused so that librdkafka's queue
        /// (rebalances above all) is served again.
        static let stallLimit: Duration = .seconds(1)
        private var pendingPauses: Set<TopicPartition> = []
        private var pendingResumes: Set<TopicPartition> = []
        private var pendingSeeks: [TopicPartition: Int64] = [:]
        private var dirty: Set<TopicPartition> = []
        private var waiter: CheckedContinuation<[KafkaMessage]?, Never>?
        private(set) var statisticsJSON: String?
        private(set) var peakBufferedCount = 0
        private(set) var crashRequested = false
        /// Set once graceful close starts: revokes during close wait no longer than this.
        private(set) var closeDeadline: ContinuousClock.Instant?

        init(maxBatchSize: Int, maxBufferedMessages: Int) {
            self.maxBatchSize = maxBatchSize
            self.maxBufferedMessages = maxBufferedMessages
        }

        var assignment: [TopicPartition] { trackers.keys.sorted() }

        /// Where each assigned partition stands, for ``KafkaConsumer/partitionStates()``.
        func partitionStates() -> [TopicPartition: KafkaConsumer.PartitionState] {
            var buffered: [TopicPartition: Int] = [:]
            for batch in buffer { for message in batch { buffered[message.topicPartition, default: 0] += 1 } }
            var states: [TopicPartition: KafkaConsumer.PartitionState] = [:]
            for (partition, tracker) in trackers {
                states[partition] = KafkaConsumer.PartitionState(
                    epoch: tracker.epoch,
                    donePosition: tracker.donePosition,
                    outstanding: tracker.outstanding,
                    paused: userPaused.contains(partition),
                    revoking: revoking.contains(partition),
                    pendingSeek: pendingSeeks[partition],
                    buffered: buffered[partition] ?? 0
                )
            }
            return states
        }

        // MARK: Lifecycle

        enum StartAction { case start, alreadyStarted }

        mutating func start() -> StartAction {
            guard lifecycle == .initial else { return .alreadyStarted }
            lifecycle = .running
            return .start
        }

        /// Asks the poll thread to stop. Returns whether it was running (and must be woken).
        mutating func requestShutdown() -> Bool {
            guard !shutdownRequested else { return false }
            shutdownRequested = true
            return lifecycle == .running
        }

        mutating func requestCrash() {
            crashRequested = true
            shutdownRequested = true
        }

        mutating func fail(_ error: KafkaError) {
            if failure == nil { failure = error }
            shutdownRequested = true
        }

        /// Stops handing out messages: the sequence finishes and buffered messages are dropped (they
        /// were never handed out, so they are neither stored nor committed and will be read again).
        mutating func beginDraining(deadline: ContinuousClock.Instant) -> CheckedContinuation<[KafkaMessage]?, Never>? {
            lifecycle = .draining
            closeDeadline = deadline
            buffer.removeAll()
            bufferedCount = 0
            defer { waiter = nil }
            return waiter
        }

        mutating func finishClosing() -> CheckedContinuation<[KafkaMessage]?, Never>? {
            lifecycle = .closed
            buffer.removeAll()
            bufferedCount = 0
            trackers.removeAll()
            defer { waiter = nil }
            return waiter
        }

        var outstanding: Int { trackers.values.reduce(0) { $0 + $1.outstanding } }

        // MARK: Poll thread

        /// Flow control between the poll thread and a slower application.
        ///
        /// Pausing partitions in librdkafka makes it drop what it prefetched and, after resume, fetch
        /// again only up to a second later, so a brief stall must not pause: the poll thread first
        /// just stops taking messages (librdkafka keeps prefetching up to `queued.max.messages.kbytes`)
        /// and waits for room. Only a buffer full for ``stallLimit`` pauses fetching, so that
        /// rebalances and errors queued behind messages are served again; by then the application is
        /// slow enough that the buffer hides the refetch.
        enum Flow: Equatable {
            case flowing
            case waitingForRoom(since: ContinuousClock.Instant)
            case paused
        }

        /// What the poll thread applies before its next fetch.
        struct PollPlan {
            var pause: Set<TopicPartition> = []
            var resume: Set<TopicPartition> = []
            var seek: [TopicPartition: Int64] = [:]
            var store: [TopicPartition: Int64] = [:]
            /// How many messages to take; zero while waiting for room.
            var maxMessages = 0
            /// Wait for room (without taking messages) until then.
            var waitForRoomUntil: ContinuousClock.Instant?
            var stop = false
        }

        private var room: Int { maxBufferedMessages - bufferedCount }

        mutating func pollPlan(now: ContinuousClock.Instant = .now) -> PollPlan {
            var plan = PollPlan()
            plan.stop = shutdownRequested
            plan.store = takeDirtyOffsets()
            plan.seek = pendingSeeks
            pendingSeeks.removeAll()

            switch flow {
            case .flowing where room < maxBatchSize:
                flow = .waitingForRoom(since: now)
                plan.waitForRoomUntil = now + Self.stallLimit
            case .waitingForRoom(let since) where room < maxBatchSize:
                if since.duration(to: now) >= Self.stallLimit {
                    flow = .paused
                    pendingPauses.formUnion(trackers.keys)
                } else {
                    plan.waitForRoomUntil = since + Self.stallLimit
                }
            case .waitingForRoom:
                flow = .flowing
            case .paused where bufferedCount <= maxBufferedMessages / 2:
                flow = .flowing
                pendingResumes.formUnion(Set(trackers.keys).subtracting(userPaused))
            case .flowing, .paused:
                break
            }
            plan.pause = pendingPauses
            plan.resume = flow == .paused ? [] : pendingResumes.subtracting(userPaused)
            pendingPauses.removeAll()
            pendingResumes.removeAll()
            if plan.waitForRoomUntil == nil {
                // While paused, fetches return nothing new but still serve librdkafka's callbacks.
                plan.maxMessages = flow == .paused ? maxBatchSize : min(maxBatchSize, room)
            }
            return plan
        }

        /// Whether the poll thread, waiting for room, should stop waiting.
        var shouldStopWaitingForRoom: Bool {
            room >= maxBatchSize || shutdownRequested || crashRequested || !pendingPauses.isEmpty
                || !pendingResumes.isEmpty || !pendingSeeks.isEmpty
        }

        /// Offsets that moved since they were last stored.
        mutating func takeDirtyOffsets() -> [TopicPartition: Int64] {
            var offsets: [TopicPartition: Int64] = [:]
            for partition in dirty {
                if let committable = trackers[partition]?.committable { offsets[partition] = committable }
            }
            dirty.removeAll()
            return offsets
        }

        enum AppendAction {
            case none
            case deliver(CheckedContinuation<[KafkaMessage]?, Never>, [KafkaMessage])
        }

        /// Adds messages from one fetch. Messages of partitions that are paused, revoked or not
        /// assigned are dropped; for paused ones (and resumed ones whose rewind is not applied yet),
        /// a seek back to the first dropped offset is planned.
        mutating func append(_ messages: [KafkaMessage]) -> AppendAction {
            guard lifecycle == .running, !messages.isEmpty else { return .none }
            var accepted = messages
            if !userPaused.isEmpty || !revoking.isEmpty || !pendingSeeks.isEmpty || !allAssigned(messages) {
                accepted = messages.filter { message in
                    let partition = message.topicPartition
                    // A partition resumed before its rewind was applied still delivers what was
                    // fetched before the pause: the rewind will fetch those messages again, so
                    // handing them out now would hand them out twice.
                    if userPaused.contains(partition) || pendingSeeks[partition] != nil {
                        if pendingSeeks[partition].map({ message.offset < $0 }) ?? true {
                            pendingSeeks[partition] = message.offset
                        }
                        return false
                    }
                    return trackers[partition] != nil && !revoking.contains(partition)
                }
                if accepted.isEmpty { return .none }
            }
            if let waiter {
                self.waiter = nil
                let batch = handOut(accepted)
                return .deliver(waiter, batch)
            }
            buffer.append(accepted)
            bufferedCount += accepted.count
            peakBufferedCount = max(peakBufferedCount, bufferedCount)
            return .none
        }

        /// Whether every message's partition is assigned, looked up once per run of one partition.
        private func allAssigned(_ messages: [KafkaMessage]) -> Bool {
            var previous: KafkaMessage?
            for message in messages {
                if let previous, previous.partition == message.partition, previous.topic == message.topic { continue }
                if trackers[message.topicPartition] == nil { return false }
                previous = message
            }
            return true
        }

        // MARK: Application

        enum NextAction {
            case deliver([KafkaMessage])
            case finished
            case suspend
        }

        mutating func next() -> NextAction {
            if !buffer.isEmpty { return .deliver(takeFromBuffer()) }
            if lifecycle == .draining || lifecycle == .closed || (shutdownRequested && lifecycle != .initial) {
                return .finished
            }
            return .suspend
        }

        /// Parks the iterator. Returns a batch to deliver at once if one arrived meanwhile.
        mutating func suspend(_ continuation: CheckedContinuation<[KafkaMessage]?, Never>) -> NextAction {
            switch next() {
            case .suspend:
                precondition(waiter == nil, "KafkaConsumer.messages supports a single iterator")
                waiter = continuation
                return .suspend
            case let other:
                return other
            }
        }

        mutating func cancelWaiter() -> CheckedContinuation<[KafkaMessage]?, Never>? {
            defer { waiter = nil }
            return waiter
        }

        /// Whether the poll thread waits for the room the application just made.
        var wantsWakeAfterDrain: Bool {
            switch flow {
            case .flowing: false
            case .waitingForRoom: room >= maxBatchSize
            case .paused: bufferedCount <= maxBufferedMessages / 2
            }
        }

        private mutating func takeFromBuffer() -> [KafkaMessage] {
            var batch = buffer.removeFirst()
            while let next = buffer.first, batch.count + next.count <= maxBatchSize {
                batch.append(contentsOf: next)
                buffer.removeFirst()
            }
            bufferedCount -= batch.count
            return handOut(batch)
        }

        private mutating func handOut(_ batch: [KafkaMessage]) -> [KafkaMessage] {
            forEachPartitionRun(of: batch) { tracker, run in
                // By position: `for message in run` copied each message to read its offset.
                for index in run.indices { tracker.handedOut(run[index].offset) }
                return false
            }
            return batch
        }

        /// Calls `body` once per run of consecutive messages of one partition (batches come in such
        /// runs), with that partition's tracker, so the dictionary is searched once per run rather
        /// than once per message. `body` returns whether the committable offset moved.
        private mutating func forEachPartitionRun(
            of messages: some Collection<KafkaMessage>,
            _ body: (inout OffsetTracker, ArraySlice<KafkaMessage>) -> Bool
        ) {
            let messages = Array(messages)
            var start = messages.startIndex
            while start < messages.endIndex {
                let first = messages[start]
                var end = start + 1
                while end < messages.endIndex, messages[end].partition == first.partition,
                    messages[end].topic == first.topic
                {
                    end += 1
                }
                let partition = first.topicPartition
                // Taken out and put back so the tracker's storage is mutated in place, not copied.
                if var tracker = trackers.removeValue(forKey: partition) {
                    if body(&tracker, messages[start..<end]) { dirty.insert(partition) }
                    trackers[partition] = tracker
                }
                start = end
            }
        }

        /// The epoch of the partition's current assignment, or nil when this consumer does not hold
        /// it: not assigned, being revoked, or the consumer closing.
        func assignmentEpoch(of partition: TopicPartition) -> Int? {
            guard lifecycle == .running, !revoking.contains(partition) else { return nil }
            return trackers[partition]?.epoch
        }

        /// Gives handed-out messages back undone (see ``OffsetTracker/release(_:)``); with `epoch`,
        /// only to the assignment it names, which may be being revoked.
        mutating func release(_ messages: some Collection<KafkaMessage>, epoch: Int? = nil) {
            forEachPartitionRun(of: messages) { tracker, run in
                guard epoch == nil || tracker.epoch == epoch else { return false }
                for index in run.indices { tracker.release(run[index].offset) }
                return false
            }
        }

        /// Marks messages done. Returns whether anyone waits for outstanding work to finish.
        mutating func markDone(_ messages: some Collection<KafkaMessage>) -> Bool {
            forEachPartitionRun(of: messages) { tracker, run in
                var advanced = false
                for index in run.indices where tracker.markDone(run[index].offset) { advanced = true }
                return advanced
            }
            return !revoking.isEmpty || lifecycle == .draining
        }

        mutating func pause(_ partitions: [TopicPartition]) {
            for partition in partitions where trackers[partition] != nil {
                userPaused.insert(partition)
                pendingPauses.insert(partition)
                pendingResumes.remove(partition)
            }
            // Messages of these partitions still in the buffer were not handed out: drop them and
            // rewind, so that after resume delivery continues exactly where the application left off.
            guard !buffer.isEmpty else { return }
            let paused = Set(partitions)
            var kept: Deque<[KafkaMessage]> = []
            var count = 0
            for batch in buffer {
                var remaining: [KafkaMessage] = []
                remaining.reserveCapacity(batch.count)
                for message in batch {
                    let partition = message.topicPartition
                    if paused.contains(partition) {
                        if pendingSeeks[partition].map({ message.offset < $0 }) ?? true {
                            pendingSeeks[partition] = message.offset
                        }
                    } else {
                        remaining.append(message)
                    }
                }
                if !remaining.isEmpty {
                    kept.append(remaining)
                    count += remaining.count
                }
            }
            buffer = kept
            bufferedCount = count
        }

        mutating func resume(_ partitions: [TopicPartition]) {
            for partition in partitions where userPaused.remove(partition) != nil {
                pendingResumes.insert(partition)
                pendingPauses.remove(partition)
            }
        }

        /// Pauses `partition` in its current assignment and returns that assignment's epoch (see
        /// ``assignmentEpoch(of:)``); if this consumer does not hold it (being revoked, gone, or
        /// closing), gives `messages` back undone instead and returns nil.
        mutating func pause(
            _ partition: TopicPartition,
            orRelease messages: some Collection<KafkaMessage>
        ) -> Int? {
            guard let epoch = assignmentEpoch(of: partition) else {
                release(messages)
                return nil
            }
            pause([partition])
            return epoch
        }

        /// Resumes `partition` if `epoch` is still its assignment's.
        mutating func resume(_ partition: TopicPartition, holding epoch: Int) -> Bool {
            guard assignmentEpoch(of: partition) == epoch else { return false }
            resume([partition])
            return true
        }

        mutating func recordStatistics(_ json: String) {
            statisticsJSON = json
        }

        // MARK: Rebalance (poll thread, inside librdkafka's callback)

        /// New partitions. Returns whether they must start paused (the buffer is full).
        mutating func assign(_ partitions: [TopicPartition]) -> Bool {
            for partition in partitions {
                trackers[partition] = OffsetTracker(epoch: nextEpoch)
                nextEpoch += 1
                revoking.remove(partition)
                userPaused.remove(partition)
            }
            return flow == .paused || lifecycle != .running
        }

        /// Starts revoking: buffered messages of the partitions are dropped, so no new work starts.
        mutating func beginRevoke(_ partitions: [TopicPartition]) {
            let revoked = Set(partitions)
            revoking.formUnion(revoked.intersection(trackers.keys))
            guard !buffer.isEmpty else { return }
            var kept: Deque<[KafkaMessage]> = []
            var count = 0
            for batch in buffer {
                let remaining = batch.filter { !revoked.contains($0.topicPartition) }
                if !remaining.isEmpty {
                    kept.append(remaining)
                    count += remaining.count
                }
            }
            buffer = kept
            bufferedCount = count
        }

        func outstanding(in partitions: [TopicPartition]) -> Int {
            partitions.reduce(0) { $0 + (trackers[$1]?.outstanding ?? 0) }
        }

        /// Where each partition is done up to (see ``OffsetTracker/donePosition``).
        func donePositions(in partitions: [TopicPartition]) -> [TopicPartition: Int64] {
            var positions: [TopicPartition: Int64] = [:]
            for partition in partitions {
                if let position = trackers[partition]?.donePosition { positions[partition] = position }
            }
            return positions
        }

        /// The committable offsets of the partitions being revoked.
        func committable(in partitions: [TopicPartition]) -> [TopicPartition: Int64] {
            var offsets: [TopicPartition: Int64] = [:]
            for partition in partitions {
                if let committable = trackers[partition]?.committable { offsets[partition] = committable }
            }
            return offsets
        }

        mutating func finishRevoke(_ partitions: [TopicPartition]) {
            for partition in partitions {
                trackers[partition] = nil
                revoking.remove(partition)
                userPaused.remove(partition)
                pendingSeeks[partition] = nil
                dirty.remove(partition)
                pendingPauses.remove(partition)
                pendingResumes.remove(partition)
            }
        }
    }
}
