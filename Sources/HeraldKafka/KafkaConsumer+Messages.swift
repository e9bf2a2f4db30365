extension KafkaConsumer {
    /// The consumer's batches of messages. Supports a single iterator.
    public struct Messages: AsyncSequence, Sendable {
        public typealias Element = [KafkaMessage]
        let consumer: KafkaConsumer

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(consumer: consumer) }

        public struct AsyncIterator: AsyncIteratorProtocol {
            let consumer: KafkaConsumer

            /// The next batch, or `nil` once the consumer has shut down (or the task is cancelled).
            public mutating func next() async -> [KafkaMessage]? {
                await consumer.nextBatch()
            }
        }
    }

    func nextBatch() async -> [KafkaMessage]? {
        switch state.withLock({ $0.next() }) {
        case .deliver(let batch):
            wakePollThreadIfDrained()
            return batch
        case .finished:
            return nil
        case .suspend:
            break
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[KafkaMessage]?, Never>) in
                switch state.withLock({ $0.suspend(continuation) }) {
                case .deliver(let batch):
                    continuation.resume(returning: batch)
                case .finished:
                    continuation.resume(returning: nil)
                case .suspend:
                    // Cancellation may have run before the continuation was parked.
                    if Task.isCancelled { state.withLock { $0.cancelWaiter() }?.resume(returning: nil) }
                }
            }
        } onCancel: {
            state.withLock { $0.cancelWaiter() }?.resume(returning: nil)
        }
    }

    private func wakePollThreadIfDrained() {
        if state.withLock({ $0.wantsWakeAfterDrain }) {
            state.broadcast()
            client.wake()
        }
    }
}
