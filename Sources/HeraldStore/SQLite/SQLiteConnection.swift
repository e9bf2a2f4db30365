import CSQLite

/// One SQLite connection with cached prepared statements. Not thread-safe: its owner calls it from
/// one serial queue.
final class SQLiteConnection: @unchecked Sendable {
    // @unchecked: confined to its owner's serial queue (SQLiteStore.queue); it is only handed
    // across threads to be used there. Confined, its state is not checked for exclusive access at
    // run time either (`@exclusivity(unchecked)`): a call into the runtime on every statement.
    private let handle: OpaquePointer
    /// Prepared statements of literal SQL, by the literal's address: finding one by its text
    /// hashed and compared a few hundred bytes on every statement a decision runs.
    @exclusivity(unchecked) private var literalStatements: [UInt: OpaquePointer] = [:]
    /// Prepared statements of SQL built at run time (`IN` lists), by their text.
    @exclusivity(unchecked) private var builtStatements: [String: OpaquePointer] = [:]
    /// Where ``bind(_:to:)`` puts the texts of the statement being run.
    @exclusivity(unchecked) private var scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
    /// Whether a query is running: its texts are in `scratch` until it is reset.
    @exclusivity(unchecked) private var running = false

    /// Process-wide settings, applied once before the first connection opens.
    private static let configured: Void = { _ = herald_sqlite_disable_memory_statistics() }()

    /// Opens (creating if needed) the database at `path`; `:memory:` for an in-memory database.
    ///
    /// - Parameter memoryMapMegabytes: how much of the file SQLite reads through a memory map
    ///   (`PRAGMA mmap_size`); 0 reads every page with `pread` into the page cache.
    /// - Parameter pageCacheMegabytes: the most memory SQLite's page cache holds (`PRAGMA
    ///   cache_size`), at least 1.
    /// - Parameter synchronous: when a commit reaches the disk (see ``SQLiteStore/Synchronous``).
    init(
        path: String,
        memoryMapMegabytes: Int = SQLiteStore.defaultMemoryMapMegabytes,
        pageCacheMegabytes: Int = SQLiteStore.defaultPageCacheMegabytes,
        synchronous: SQLiteStore.Synchronous = .full
    ) throws(StoreError) {
        Self.configured
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        guard sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let handle { sqlite3_close_v2(handle) }
            throw StoreError(code: .storeOpen, message: "cannot open the SQLite database \(path): \(message)")
        }
        self.handle = handle
        // Readers do not block the writer. How durable a commit is: see SQLiteStore.Synchronous.
        try execute("PRAGMA journal_mode = WAL")
        try execute("PRAGMA synchronous = \(synchronous == .full ? "FULL" : "NORMAL")")
        try execute("PRAGMA foreign_keys = ON")
        try execute("PRAGMA busy_timeout = 5000")
        // A memory map (if configured) reads pages without copying each one in with pread, which
        // makes lookups in a directory of a million devices cheaper; mapped pages count in the
        // process's resident memory, so the default is none (``SQLiteStore/defaultMemoryMapMegabytes``).
        // Clamped before the shift, which would otherwise wrap a huge setting into a negative size;
        // SQLite then caps it at its own limit.
        let megabytes = Int64(min(max(memoryMapMegabytes, 0), Int(Int64.max >> 20)))
        try execute("PRAGMA mmap_size = \(megabytes << 20)")
        // A negative cache_size is in KiB. Why 16 MiB by default: see
        // ``SQLiteStore/defaultPageCacheMegabytes``.
        let kibibytes = min(max(pageCacheMegabytes, 1), SQLiteStore.maximumPageCacheMegabytes) * 1024
        try execute("PRAGMA cache_size = -\(kibibytes)")
        // Checkpoint the write-ahead log every 64 MiB rather than every 4 MiB: a page written many
        // times between checkpoints is copied back once. Throttle windows and the ledger are
        // written at random places, so this halves the checkpoint work of a busy worker.
        try execute("PRAGMA wal_autocheckpoint = 16384")
    }

    deinit {
        for statement in literalStatements.values { sqlite3_finalize(statement) }
        for statement in builtStatements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
        scratch.deallocate()
    }

    private var lastError: String { String(cString: sqlite3_errmsg(handle)) }

    /// `store.rejected` for what the statement's values cause (a constraint, a value too big or of
    /// the wrong type), `store.query` for anything else.
    static func code(of result: Int32) -> StoreError.Code {
        switch result & 0xFF {
        case SQLITE_CONSTRAINT, SQLITE_TOOBIG, SQLITE_MISMATCH: .storeRejected
        default: .storeQuery
        }
    }

    /// Runs one or more statements without results.
    func execute(_ sql: String) throws(StoreError) {
        var error: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(handle, sql, nil, nil, &error) == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? lastError
            sqlite3_free(error)
            throw StoreError(code: .storeQuery, message: message)
        }
    }

    /// A value bound to a `?` parameter.
    enum Value {
        case text(String)
        case integer(Int64)
        case blob([UInt8])
        case null
    }

    /// A statement's text: a literal, or (explicitly) text built at run time.
    struct SQL: ExpressibleByStringLiteral, Sendable {
        fileprivate enum Source {
            case literal(StaticString)
            case built(String)
            case shared(Shared)
        }

        /// Built text that lives as long as the process: its statement is found by the object's
        /// address, as a literal's is by its text's, instead of by hashing and comparing the text.
        fileprivate final class Shared: Sendable {
            let text: String

            init(_ text: String) {
                self.text = text
            }
        }

        fileprivate let source: Source

        init(stringLiteral literal: StaticString) {
            // A one-character literal may come as a scalar, with no text to point at.
            source = literal.hasPointerRepresentation ? .literal(literal) : .built(literal.description)
        }

        /// SQL that varies at run time, such as an `IN` list's placeholders.
        init(built text: String) {
            source = .built(text)
        }

        /// SQL built once, run often, and kept for the process's life (held by a `static`): an
        /// `IN` list of a given size. Its statement is found by the object's address, without
        /// hashing and comparing its text, which for hundreds of placeholders is a kilobyte.
        init(kept text: String) {
            source = .shared(Shared(text))
        }
    }

    /// How many times SQLite has prepared the cached statements again since they were first
    /// prepared: after a schema change, or for new bound values when a statement's plan depends on
    /// them. For tests: statements run for every decision must not be among the latter.
    var reprepares: Int {
        (Array(literalStatements.values) + Array(builtStatements.values)).reduce(0) {
            $0 + Int(sqlite3_stmt_status($1, SQLITE_STMTSTATUS_REPREPARE, 0))
        }
    }

    /// Runs a (cached, prepared) statement with `values` bound and calls `row` for each result row.
    func query(
        _ sql: SQL,
        _ values: [Value] = [],
        row: (Row) throws(StoreError) -> Void = { _ in }
    ) throws(StoreError) {
        var textBytes = 0
        for case .text(let text) in values { textBytes += text.utf8.count }
        try run(sql, textBytes: textBytes, bind: { binder in for value in values { binder.bind(value) } }, row: row)
    }

    /// Runs a statement, its parameters bound in order by `bind` (see ``Binder``), and calls `row`
    /// for each result row.
    private func run(
        _ sql: SQL,
        textBytes: Int,
        bind: (inout Binder) -> Void,
        row: (Row) throws(StoreError) -> Void
    ) throws(StoreError) {
        let statement = try prepared(sql)
        // A query run from another's row callback must not overwrite the outer one's texts.
        let nested = running
        running = true
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
            running = nested
        }
        var binder = makeBinder(statement, textBytes: textBytes, inPlace: !nested)
        bind(&binder)
        guard binder.result == SQLITE_OK else { throw StoreError(code: .storeQuery, message: "bind: \(lastError)") }
        while true {
            let result = sqlite3_step(statement)
            switch result {
            case SQLITE_ROW: try row(Row(statement: statement))
            case SQLITE_DONE: return
            default: throw StoreError(code: Self.code(of: result), message: lastError)
            }
        }
    }

    /// Binds one statement's parameters, in order. A text is copied into the connection's scratch
    /// buffer and bound in place (SQLite's "static" binding), valid until the statement is reset:
    /// letting SQLite copy each text (SQLITE_TRANSIENT) cost an allocation per parameter, on
    /// every statement of a decision. A text that does not fit what is left of the buffer, or any
    /// text of a nested query (whose outer query's texts are in the buffer), SQLite copies.
    struct Binder: ~Copyable {
        fileprivate let statement: OpaquePointer
        /// Where texts go; nil: SQLite copies them.
        fileprivate let scratch: UnsafeMutableRawBufferPointer?
        fileprivate var offset = 0
        fileprivate var position: Int32 = 1
        /// The first binding's failure, if any.
        fileprivate var result = SQLITE_OK

        fileprivate init(statement: OpaquePointer, scratch: UnsafeMutableRawBufferPointer?) {
            self.statement = statement
            self.scratch = scratch
        }

        private mutating func next(_ outcome: Int32) {
            if result == SQLITE_OK { result = outcome }
            position += 1
        }

        mutating func integer(_ value: Int64) { next(sqlite3_bind_int64(statement, position, value)) }

        mutating func null() { next(sqlite3_bind_null(statement, position)) }

        mutating func text(_ value: String) {
            var value = value
            let outcome = value.withUTF8 { utf8 -> Int32 in
                guard let scratch, offset + utf8.count <= scratch.count else {
                    return sqlite3_bind_text(
                        statement,
                        position,
                        // Never a null pointer, even for an empty text: that would bind NULL.
                        utf8.baseAddress.map { UnsafeRawPointer($0) }
                            ?? UnsafeRawPointer(("" as StaticString).utf8Start),
                        Int32(utf8.count),
                        herald_sqlite_transient()
                    )
                }
                let start = scratch.baseAddress! + offset
                if let source = utf8.baseAddress { start.copyMemory(from: source, byteCount: utf8.count) }
                offset += utf8.count
                return sqlite3_bind_text(statement, position, start, Int32(utf8.count), nil)
            }
            next(outcome)
        }

        mutating func bind(_ value: Value) {
            switch value {
            case .text(let text): self.text(text)
            case .integer(let number): integer(number)
            case .blob(let bytes): blob(bytes)
            case .null: null()
            }
        }

        mutating func blob(_ bytes: [UInt8]) {
            next(
                bytes.withUnsafeBytes {
                    sqlite3_bind_blob(statement, position, $0.baseAddress, Int32($0.count), herald_sqlite_transient())
                }
            )
        }
    }

    /// A binder for `statement` whose scratch buffer holds at least `textBytes` (grown if needed,
    /// while no statement's texts are in it).
    private func makeBinder(_ statement: OpaquePointer, textBytes: Int, inPlace: Bool) -> Binder {
        guard inPlace else { return Binder(statement: statement, scratch: nil) }
        if scratch.count < textBytes {
            scratch.deallocate()
            scratch = .allocate(byteCount: max(textBytes, 2 * scratch.count), alignment: 1)
        }
        return Binder(statement: statement, scratch: scratch)
    }

    /// Runs a statement that returns no rows, its parameters bound in order by `bind`, and answers
    /// how many rows it changed: for the hottest statements, whose values would otherwise each be
    /// wrapped in a ``Value`` of an array made for the call.
    ///
    /// - Parameter textBytes: the UTF-8 length of the texts `bind` binds, for them all to be bound
    ///   in place; a text past it is copied by SQLite instead.
    func change(_ sql: SQL, textBytes: Int, bind: (inout Binder) -> Void) throws(StoreError) -> Int {
        try run(sql, textBytes: textBytes, bind: bind, row: { _ in })
        return Int(sqlite3_changes(handle))
    }

    /// Runs a statement that returns no rows and answers how many rows it inserted, updated or
    /// deleted. Cheaper than `RETURNING`, which SQLite buffers in a temporary table.
    func change(_ sql: SQL, _ values: [Value] = []) throws(StoreError) -> Int {
        try query(sql, values)
        return Int(sqlite3_changes(handle))
    }

    /// The rowid of the last row an `INSERT` on this connection added.
    var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Runs `body` in a transaction: committed if it returns, rolled back if it throws.
    func transaction<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private func prepared(_ sql: SQL) throws(StoreError) -> OpaquePointer {
        switch sql.source {
        case .literal(let literal):
            let key = UInt(bitPattern: literal.utf8Start)
            if let statement = literalStatements[key] { return statement }
            // A string literal is always stored as a pointer to its text, which lives as long as the
            // binary does.
            let statement = try prepare(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
            literalStatements[key] = statement
            return statement
        case .shared(let shared):
            // Never the address of a literal's text: an object is on the heap. Kept for the
            // process's life, its address is never another's.
            let key = UInt(bitPattern: ObjectIdentifier(shared))
            if let statement = literalStatements[key] { return statement }
            var text = shared.text
            let statement = try text.withUTF8 { text in Result { () throws(StoreError) in try prepare(text) } }.get()
            literalStatements[key] = statement
            return statement
        case .built(var text):
            if let statement = builtStatements[text] { return statement }
            let statement = try text.withUTF8 { text in Result { () throws(StoreError) in try prepare(text) } }.get()
            builtStatements[text] = statement
            return statement
        }
    }

    private func prepare(_ text: UnsafeBufferPointer<UInt8>) throws(StoreError) -> OpaquePointer {
        var statement: OpaquePointer?
        let result = text.withMemoryRebound(to: CChar.self) {
            sqlite3_prepare_v3(
                handle,
                $0.baseAddress,
                Int32($0.count),
                UInt32(SQLITE_PREPARE_PERSISTENT),
                &statement,
                nil
            )
        }
        guard result == SQLITE_OK, let statement else {
            throw StoreError(code: .storeQuery, message: "prepare: \(lastError)")
        }
        return statement
    }

    /// One result row, valid only inside the `row` callback.
    struct Row {
        let statement: OpaquePointer

        func text(_ column: Int32) -> String? {
            guard let pointer = sqlite3_column_text(statement, column) else { return nil }
            let count = Int(sqlite3_column_bytes(statement, column))
            return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
        }

        func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

        /// The column's bytes, valid only inside the `row` callback (empty for NULL).
        func blob(_ column: Int32) -> UnsafeRawBufferPointer {
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count > 0, let pointer = sqlite3_column_blob(statement, column) else {
                return UnsafeRawBufferPointer(start: nil, count: 0)
            }
            return UnsafeRawBufferPointer(start: pointer, count: count)
        }

        func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }
    }
}

extension SQLiteStore {
    /// The SQLite library the store runs with (the system's, found at load time), such as `3.40.1`.
    public static var libraryVersion: String { String(cString: sqlite3_libversion()) }
}
