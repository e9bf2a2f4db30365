import Foundation
import HeraldEvents
import HeraldPolicy
import HeraldReplay
import HeraldStore

/// `herald directory import FILE`: loads a JSON Lines snapshot of `herald.directory` events (one
/// CloudEvent per line) into the store, in batches, in file order.
public enum DirectoryImport {
    /// What an import did.
    public struct Report: Sendable {
        public var imported = 0
        /// How many input lines were rejected.
        public var rejectedCount = 0
        /// The first ``listedRejections`` rejected lines: each one's number and why (never its
        /// values).
        public var rejected: [String] = []
        /// Changes dated more than ``DirectoryEvent/clockTolerance`` after `now`, imported as of
        /// `now` (see ``DirectoryEvent/applied(at:)``).
        public var redated = 0
        /// Devices removed, oldest first, because their user had more than the directory keeps.
        public var evicted = 0
    }

    public static let batchSize = 1000
    /// How many rejected lines a report names: a file of millions of bad lines is counted, not
    /// listed line by line in memory and on the terminal.
    public static let listedRejections = 100

    /// Imports every valid line; invalid lines are reported and skipped, so one bad line does not
    /// hold back the rest. The file may be gzip-compressed.
    ///
    /// - Parameter now: the time changes may not be dated after (beyond the tolerance), as the
    ///   worker applies them; nil keeps every date (replay, whose snapshot is from its past).
    public static func run(file: String, into store: any StateStore, now: Timestamp? = nil) async throws -> Report {
        let reader: LineReader
        do {
            reader = try LineReader(path: file)
        } catch {
            throw StoreError(code: .storeOpen, message: "cannot read \(file)")
        }
        var report = Report()
        var batch: [DirectoryEvent] = []
        batch.reserveCapacity(batchSize)
        let decoder = EventDecoder()
        while true {
            let line = try reader.nextLine { bytes -> Result<DirectoryEvent, any Error>? in
                guard bytes.contains(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }) else { return nil }
                return Result { try DirectoryEvent(try decoder.decode(value: bytes, headers: [])) }
            }
            guard let line else { break }
            switch line {
            case nil:
                continue
            case .success(let change)?:
                if let now {
                    let (applied, redated) = change.applied(at: now)
                    if redated { report.redated += 1 }
                    batch.append(applied)
                } else {
                    batch.append(change)
                }
            case .failure(let error)?:
                report.rejectedCount += 1
                if report.rejected.count < listedRejections {
                    report.rejected.append("line \(reader.lineNumber): \(error)")
                }
            }
            if batch.count >= batchSize {
                report.evicted += try await store.apply(batch).evicted.count
                report.imported += batch.count
                batch.removeAll(keepingCapacity: true)
            }
        }
        if !batch.isEmpty {
            report.evicted += try await store.apply(batch).evicted.count
            report.imported += batch.count
        }
        try await store.analyze()
        return report
    }
}
