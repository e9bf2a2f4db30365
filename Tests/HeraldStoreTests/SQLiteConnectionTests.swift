import Foundation
import Testing

@testable import HeraldStore

/// ``SQLiteConnection`` binds texts in place from a buffer it reuses; these check the cases where
/// that could go wrong.
@Suite("SQLite connection")
struct SQLiteConnectionTests {
    func connection() throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: ":memory:")
        try connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT)")
        return connection
    }

    @Test("a file's commits wait for the disk unless `normal` is asked for (PRAGMA synchronous)")
    func synchronousSetting() throws {
        func setting(_ synchronous: SQLiteStore.Synchronous?) throws -> Int64? {
            let path = NSTemporaryDirectory() + "herald-sync-\(UUID().uuidString).sqlite"
            defer {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            }
            let connection =
                try synchronous.map { try SQLiteConnection(path: path, synchronous: $0) }
                ?? SQLiteConnection(path: path)
            var value: Int64?
            try connection.query("PRAGMA synchronous", []) { value = $0.integer(0) }
            return value
        }
        // SQLite's numbering: 1 NORMAL, 2 FULL.
        #expect(try setting(nil) == 2)
        #expect(try setting(.full) == 2)
        #expect(try setting(.normal) == 1)
    }

    @Test("an empty text is stored as '', not NULL; texts larger than the buffer arrive whole")
    func emptyAndLargeTexts() throws {
        let connection = try connection()
        let large = String(repeating: "å", count: 10_000)
        try connection.query("INSERT INTO t (a, b) VALUES (?, ?)", [.text(""), .text(large)])
        var row: [String?] = []
        var isNull = true
        try connection.query("SELECT a, b FROM t") {
            row = [$0.text(0), $0.text(1)]
            isNull = $0.isNull(0)
        }
        #expect(row == ["", large])
        #expect(!isNull)
    }

    @Test("a query run from another query's row keeps the outer query's texts intact")
    func nestedQuery() throws {
        let connection = try connection()
        for index in 0..<3 {
            try connection.query("INSERT INTO t (a, b) VALUES (?, ?)", [.text("outer-\(index)"), .text("x")])
        }
        var seen: [String] = []
        try connection.query("SELECT id, a FROM t WHERE a >= ? AND b = ? ORDER BY id", [.text("outer-"), .text("x")]) {
            row throws(StoreError) in
            seen.append(row.text(1) ?? "")
            // Binds other texts while the outer statement is still stepping with its own.
            try connection.query("INSERT INTO t (a, b) VALUES (?, ?)", [.text("inner-\(row.integer(0))"), .text("y")])
        }
        #expect(seen == ["outer-0", "outer-1", "outer-2"])
        var inner = 0
        try connection.query("SELECT count(*) FROM t WHERE b = ?", [.text("y")]) { inner = Int($0.integer(0)) }
        #expect(inner == 3)
    }
}
