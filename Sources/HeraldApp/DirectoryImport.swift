import Foundation
import HeraldEvents
import HeraldPolicy
import HeraldStore

/// `herald directory import FILE`: loads a JSON Lines snapshot of `herald.directory` events (one
/// CloudEvent per line) into the store, in batches, in file order.
public enum DirectoryImport {
    /// What an import did.
    public struct Report: Sendable {
        public var imported = 0
        /// One line per rejected input line: its number and why (never its values).
        public var rejected: [String] = []
    }

    public static let batchSize = 1000

    /// Imports every valid line; invalid lines are reported and skipped, so one bad line does not
    /// hold back the rest.
    public static func run(file: String, into store: any StateStore) async throws -> Report {
        guard let handle = FileHandle(forReadingAtPath: file) else {
            throw StoreError(code: .storeOpen, message: "cannot read \(file)")
        }
        defer { try? handle.close() }
        var report = Report()
        var batch: [DirectoryEvent] = []
        batch.reserveCapacity(batchSize)
        var lineNumber = 0
        var pending: [UInt8] = []
        let decoder = EventDecoder()

        func take(_ line: ArraySlice<UInt8>) {
            lineNumber += 1
            guard line.contains(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\r") }) else { return }
            do {
                let event = try decoder.decode(value: Array(line))
                batch.append(try DirectoryEvent(event))
            } catch {
                report.rejected.append("line \(lineNumber): \(error)")
            }
        }

        while true {
            let chunk = handle.readData(ofLength: 1 << 20)
            if chunk.isEmpty { break }
            pending.append(contentsOf: chunk)
            var start = pending.startIndex
            while let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                take(pending[start..<newline])
                start = newline + 1
                if batch.count >= batchSize {
                    try await store.apply(batch)
                    report.imported += batch.count
                    batch.removeAll(keepingCapacity: true)
                }
            }
            pending.removeSubrange(..<start)
        }
        if !pending.isEmpty { take(pending[...]) }
        if !batch.isEmpty {
            try await store.apply(batch)
            report.imported += batch.count
        }
        try await store.analyze()
        return report
    }
}
