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

    @Test("values bound one by one: '', NULL, integers, and texts past the stated size or nested arrive whole")
    func binder() throws {
        let connection = try connection()
        let large = String(repeating: "é", count: 5_000)
        // 0 bytes stated: the texts do not all fit what the buffer holds, and SQLite copies those.
        let changed = try connection.change("INSERT INTO t (id, a, b) VALUES (?, ?, ?), (?, ?, ?)", textBytes: 0) {
            binder in
            binder.integer(7)
            binder.text("")
            binder.null()
            binder.integer(8)
            binder.text(large)
            binder.text("short")
        }
        #expect(changed == 2)
        var rows: [[String?]] = []
        try connection.query("SELECT id, a, b FROM t ORDER BY id") {
            rows.append([String($0.integer(0)), $0.isNull(1) ? nil : $0.text(1), $0.isNull(2) ? nil : $0.text(2)])
        }
        #expect(rows == [["7", "", nil], ["8", large, "short"]])
        // Bound from a row of another query: the outer query's texts stay as they were.
        var seen: [String] = []
        try connection.query("SELECT a FROM t WHERE b = ? OR a = ? ORDER BY id", [.text("short"), .text("")]) {
            row throws(StoreError) in
            seen.append(row.text(0) ?? "?")
            _ = try connection.change("INSERT INTO t (a, b) VALUES (?, ?)", textBytes: 9) { binder in
                binder.text("inner-row")
                binder.text("nested")
            }
        }
        #expect(seen == ["", large])
        var nested = 0
        try connection.query("SELECT count(*) FROM t WHERE a = ? AND b = ?", [.text("inner-row"), .text("nested")]) {
            nested = Int($0.integer(0))
        }
        #expect(nested == 2)
        // A failed binding (a position past the statement's parameters) is an error, not a silent NULL.
        #expect(throws: StoreError.self) {
            _ = try connection.change("INSERT INTO t (a) VALUES (?)", textBytes: 2) { binder in
                binder.text("a")
                binder.text("b")
            }
        }
    }
}
