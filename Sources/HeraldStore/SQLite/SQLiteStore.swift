import Dispatch
import HeraldEvents
import HeraldPolicy
import Synchronization

/// Herald's state in SQLite: a file, or `:memory:` for replay and tests. Every call runs on one
/// serial queue, off Swift's cooperative pool, and a batch is one transaction or one query. Writers
/// in other processes are serialized by SQLite's lock (`BEGIN IMMEDIATE`), so limits hold for them
/// too; for many workers, use ``PostgresStore``.
public final class SQLiteStore: StateStore, @unchecked Sendable {
    // @unchecked: `connection` is only used on `queue`, which is serial.
    private let connection: SQLiteConnection
    private let queue = DispatchQueue(label: "herald.store.sqlite")
    // Only used on `queue`, like `connection`; so not checked for exclusive access at run time.
    @exclusivity(unchecked) var cache: RecipientCache
    /// ``directoryCacheStatistics``' counts, kept on `queue` and read from anywhere.
    private let cacheHits = Atomic<Int>(0)
    private let cacheMisses = Atomic<Int>(0)
    private let cachedUsers = Atomic<Int>(0)
    /// `cache.capacity`, readable off `queue`.
    private let cacheCapacity: Int
    // Only used on `queue`, like `connection`; so not checked for exclusive access at run time.
    @exclusivity(unchecked) var throttle: ThrottleCounts
    // Only used on `queue`, like `connection`; so not checked for exclusive access at run time.
    @exclusivity(unchecked) var digests: DigestBuffer
    /// The most devices kept for one user (``DirectoryLimits/maximumDevicesPerUser``).
    let maximumDevicesPerUser: Int

    /// Notifications counted in memory and journaled before the journal is folded into the windows.
    static let throttleFoldThreshold = 50_000
    /// The fewest windows a transaction writes while a fold is under way (as many as it counted, if
    /// those are more).
    static let throttleFoldSlice = 256
    /// Digest items appended before a deciding transaction indexes them (``DigestBuffer``). A fold
    /// of this many sorts about 4 MB of keys and held the store for 0.1–0.3 s with 2,000 busy users
    /// (those batches' latency: p99 ≤ 1 s instead of ≤ 0.5 s); at half or a quarter of it, folds
    /// wrote mostly the same index pages more often, and single runs were 6–14% slower.
    static let digestFoldThreshold = 100_000

    /// Users whose recipient record is kept in memory by default.
    public static let defaultDirectoryCacheCapacity = 200_000

    /// When a commit reaches the disk (`store.sqlite_sync`). The worker commits a batch's Kafka
    /// offsets once the store has committed its work, so what a commit holds must outlive the
    /// machine, not only the process: a deferred notification, a digest's items or a device
    /// registration rolled back by a power cut after its offset was committed would never come
    /// again.
    public enum Synchronous: String, Sendable, CaseIterable {
        /// Each commit waits for the write-ahead log to reach the disk (`PRAGMA synchronous = FULL`).
        case full
        /// Commits survive the process crashing, but the last ones can roll back if the machine
        /// loses power or the kernel crashes (`PRAGMA synchronous = NORMAL` in WAL mode): for a
        /// disk whose flushes are slow, where that loss is accepted.
        case normal
    }
    /// How much of the database file is read through a memory map by default (`store.sqlite_mmap_mb`):
    /// none. Mapped pages count in the worker's resident memory, and the map grows with the file —
    /// the decision ledger grows with every decision — up to ``maximumMemoryMapMegabytes``, so a
    /// worker that has run for days looked as if it leaked. Without the map, pages are read with
    /// `pread` into SQLite's bounded page cache and the kernel's page cache keeps the file. The
    /// pipeline benchmark ran as fast either way (its directory fits the recipient cache); in a
    /// directory of a million devices a lookup took 6.4 µs instead of 4.2 and decisions ran a fifth
    /// slower (`herald bench decisions --sqlite-mmap-mb`), which an operator can buy back with the
    /// setting.
    public static let defaultMemoryMapMegabytes = 0
    /// The most SQLite maps unless it is built with a larger `SQLITE_MAX_MMAP_SIZE` (Debian's is
    /// not); a larger setting is capped there.
    public static let maximumMemoryMapMegabytes = 2047
    /// The most memory SQLite's page cache holds by default (`store.sqlite_cache_mb`): 16 MiB.
    ///
    /// With the directory in the recipient cache, the page cache mostly holds the ledger's newest
    /// pages and the throttle windows' and journal's, and the pipeline benchmark ran as fast with
    /// 8 or 16 MiB as with 32 or 128 (docs/benchmarks.md). The 16 MiB it saves against 32 make
    /// room under the worker's 300 MB for batches of 3,000 (`worker.batch_size`). What it costs:
    /// with a million devices, most of their users outside the recipient cache, `herald bench
    /// decisions --random-event-ids` ran 2.6% fewer decisions/s over seven alternated pairs (within
    /// the noise; their records read again with `pread` more often) and decided as fast, where
    /// 8 MiB had slowed its inserts at random places in a large ledger by a tenth to a sixth. A
    /// worker with a directory much larger than `store.directory_cache` can buy the look-ups back
    /// with the setting.
    public static let defaultPageCacheMegabytes = 16
    /// The largest `store.sqlite_cache_mb` taken: 64 GiB.
    public static let maximumPageCacheMegabytes = 65536

    /// The schema versions, applied in order; `PRAGMA user_version` records how far a database is.
    static let migrations: [String] = [
        """
        CREATE TABLE devices (
            user_id TEXT NOT NULL, device_id TEXT NOT NULL, platform TEXT NOT NULL, provider TEXT NOT NULL,
            token TEXT NOT NULL, app_id TEXT NOT NULL, sandbox INTEGER NOT NULL, locale TEXT,
            registered_at INTEGER NOT NULL, PRIMARY KEY (user_id, device_id));
        CREATE UNIQUE INDEX devices_by_token ON devices (provider, token);
        CREATE TABLE invalid_tokens (
            provider TEXT NOT NULL, token TEXT NOT NULL, invalidated_at INTEGER NOT NULL, PRIMARY KEY (provider, token));
        CREATE TABLE profiles (user_id TEXT PRIMARY KEY, locale TEXT, time_zone TEXT, updated_at INTEGER NOT NULL);
        CREATE TABLE preferences (user_id TEXT PRIMARY KEY, document TEXT NOT NULL, updated_at INTEGER NOT NULL);
        """,
        """
        CREATE TABLE decisions (
            event_id TEXT NOT NULL, kind TEXT NOT NULL, recipient TEXT NOT NULL, reason TEXT NOT NULL, due_at INTEGER,
            decided_at INTEGER NOT NULL, PRIMARY KEY (event_id, kind, recipient)) WITHOUT ROWID;
        CREATE INDEX decisions_by_time ON decisions (decided_at);
        CREATE TABLE throttle_windows (
            recipient TEXT NOT NULL, rule TEXT NOT NULL, window_start INTEGER NOT NULL, window_end INTEGER NOT NULL,
            count INTEGER NOT NULL, PRIMARY KEY (recipient, rule, window_start)) WITHOUT ROWID;
        CREATE TABLE due_work (
            id INTEGER PRIMARY KEY, type TEXT NOT NULL, due_at INTEGER NOT NULL, recipient TEXT NOT NULL,
            event_id TEXT, kind TEXT, rule TEXT, window_start INTEGER, payload TEXT, claimed_until INTEGER);
        CREATE UNIQUE INDEX due_deferred ON due_work (event_id, kind, recipient) WHERE type = 'deferred';
        CREATE UNIQUE INDEX due_digest ON due_work (recipient, rule, window_start) WHERE type = 'digest';
        CREATE INDEX due_by_time ON due_work (due_at);
        CREATE TABLE digest_items (
            id INTEGER PRIMARY KEY, recipient TEXT NOT NULL, rule TEXT NOT NULL, window_start INTEGER NOT NULL,
            event_id TEXT NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL, added_at INTEGER NOT NULL);
        CREATE INDEX digest_items_by_window ON digest_items (recipient, rule, window_start, id);
        """,
        // 3: one row per user (profile and preferences together) and devices clustered by user, with
        // the invalidation that applies to each device kept on the device: a batch lookup is two
        // index searches per user instead of nine.
        """
        CREATE TABLE users (
            user_id TEXT PRIMARY KEY, locale TEXT, time_zone TEXT, profile_at INTEGER, preferences TEXT,
            preferences_at INTEGER) WITHOUT ROWID;
        INSERT INTO users (user_id, locale, time_zone, profile_at)
            SELECT user_id, locale, time_zone, updated_at FROM profiles;
        INSERT INTO users (user_id, preferences, preferences_at) SELECT user_id, document, updated_at FROM preferences WHERE true
            ON CONFLICT (user_id) DO UPDATE SET preferences = excluded.preferences, preferences_at = excluded.preferences_at;
        DROP TABLE profiles;
        DROP TABLE preferences;
        CREATE TABLE devices_by_user (
            user_id TEXT NOT NULL, device_id TEXT NOT NULL, platform TEXT NOT NULL, provider TEXT NOT NULL,
            token TEXT NOT NULL, app_id TEXT NOT NULL, sandbox INTEGER NOT NULL, locale TEXT,
            registered_at INTEGER NOT NULL, invalidated_at INTEGER, PRIMARY KEY (user_id, device_id)) WITHOUT ROWID;
        INSERT INTO devices_by_user
            SELECT d.user_id, d.device_id, d.platform, d.provider, d.token, d.app_id, d.sandbox, d.locale, d.registered_at,
                (SELECT i.invalidated_at FROM invalid_tokens i
                 WHERE i.provider = d.provider AND i.token = d.token AND i.invalidated_at >= d.registered_at)
            FROM devices d;
        DROP TABLE devices;
        ALTER TABLE devices_by_user RENAME TO devices;
        CREATE UNIQUE INDEX devices_by_token ON devices (provider, token);
        """,
        // 4: throttle windows clustered by window, then user: the windows a busy worker counts are
        // the current ones, so they share pages, and ended windows stay out of the way until purged.
        """
        CREATE TABLE windows_by_start (
            window_start INTEGER NOT NULL, rule TEXT NOT NULL, recipient TEXT NOT NULL, window_end INTEGER NOT NULL,
            count INTEGER NOT NULL, PRIMARY KEY (window_start, rule, recipient)) WITHOUT ROWID;
        INSERT INTO windows_by_start SELECT window_start, rule, recipient, window_end, count FROM throttle_windows;
        DROP TABLE throttle_windows;
        ALTER TABLE windows_by_start RENAME TO throttle_windows;
        """,
        // 5: the sender's delivery ledger and the Expo tickets that still owe a receipt.
        """
        CREATE TABLE deliveries (
            notification_id TEXT PRIMARY KEY, provider TEXT NOT NULL, delivered_at INTEGER NOT NULL) WITHOUT ROWID;
        CREATE INDEX deliveries_by_time ON deliveries (delivered_at);
        CREATE TABLE pending_receipts (
            ticket_id TEXT PRIMARY KEY, notification_id TEXT NOT NULL, recipient TEXT NOT NULL, token TEXT NOT NULL,
            check_after INTEGER NOT NULL, claimed_until INTEGER) WITHOUT ROWID;
        CREATE INDEX pending_receipts_by_time ON pending_receipts (check_after);
        """,
        // 6: notifications counted against throttle windows, appended and folded into the windows in
        // bulk (see ThrottleCounts).
        """
        CREATE TABLE throttle_journal (
            id INTEGER PRIMARY KEY, window_start INTEGER NOT NULL, rule TEXT NOT NULL, recipient TEXT NOT NULL,
            window_end INTEGER NOT NULL);
        """,
        // 7: the journal holds one row per transaction, its counts packed (see ThrottleJournal). Rows
        // in the old shape are folded into the windows first. WHERE true: SQLite's documented way to
        // keep the upsert's ON from parsing as a join's.
        """
        INSERT INTO throttle_windows (window_start, rule, recipient, window_end, count)
        SELECT window_start, rule, recipient, max(window_end), count(*) FROM throttle_journal WHERE true
        GROUP BY window_start, rule, recipient
        ON CONFLICT (window_start, rule, recipient) DO UPDATE
        SET count = count + excluded.count, window_end = max(window_end, excluded.window_end);
        DROP TABLE throttle_journal;
        CREATE TABLE throttle_journal (id INTEGER PRIMARY KEY, entries BLOB NOT NULL);
        """,
        // 8: each user's recipient record in one row (see RecipientRecord), kept by every directory
        // change.
        """
        CREATE TABLE recipient_records (user_id TEXT PRIMARY KEY, record BLOB NOT NULL) WITHOUT ROWID;
        """,
        // 9: the records keyed by a hash of the user id first (RecipientRecord.key), then the id.
        // Filled from devices and users by the migration (recipientRecordsVersion).
        """
        DROP TABLE recipient_records;
        CREATE TABLE recipient_records (
            user_key INTEGER NOT NULL, user_id TEXT NOT NULL, record BLOB NOT NULL, PRIMARY KEY (user_key, user_id))
            WITHOUT ROWID;
        """,
        // 10: the ledger and deferred work keyed by the event's own time first (see DecisionKey);
        // 0 for an event without one. Rows decided before this have 0 too, whatever their event's
        // time was: until they are purged (decisions_legacy_horizon), a new decision of an event
        // with a time first looks for its key at time 0, so a redelivery across the upgrade is
        // still recognised.
        """
        CREATE TABLE decisions_by_event_time (
            event_time INTEGER NOT NULL, event_id TEXT NOT NULL, kind TEXT NOT NULL, recipient TEXT NOT NULL,
            reason TEXT NOT NULL, due_at INTEGER, decided_at INTEGER NOT NULL,
            PRIMARY KEY (event_time, event_id, kind, recipient)) WITHOUT ROWID;
        INSERT INTO decisions_by_event_time
            SELECT 0, event_id, kind, recipient, reason, due_at, decided_at FROM decisions ORDER BY event_id, kind, recipient;
        CREATE TABLE decisions_legacy_horizon (decided_at INTEGER NOT NULL);
        INSERT INTO decisions_legacy_horizon SELECT max(decided_at) FROM decisions HAVING count(*) > 0;
        DROP TABLE decisions;
        ALTER TABLE decisions_by_event_time RENAME TO decisions;
        CREATE INDEX decisions_by_time ON decisions (decided_at);
        ALTER TABLE due_work ADD COLUMN event_time INTEGER NOT NULL DEFAULT 0;
        DROP INDEX due_deferred;
        CREATE UNIQUE INDEX due_deferred ON due_work (event_time, event_id, kind, recipient) WHERE type = 'deferred';
        """,
        // 11: no index of every ledger entry by its decision time. An entry is decided at or after
        // its event's time, so the purge finds it by its key (event time first) instead; only
        // entries without an event time, or with one later than their decision (a producer's clock
        // ahead of ours), are indexed by decision time. The full index was a second B-tree insert
        // per decision: a quarter of `decide` (4.0 against 3.0 µs per decision, `bench decisions`).
        """
        CREATE INDEX decisions_untimed_by_time ON decisions (decided_at) WHERE event_time = 0 OR event_time > decided_at;
        DROP INDEX decisions_by_time;
        """,
        // 12: users deleted (`user.deleted`): a change for the user dated no later than the deletion
        // is ignored, until the purge forgets the deletion a retention after it was applied.
        // Deferred notifications by recipient, for the deletion to find them without reading all
        // due work.
        """
        CREATE TABLE deleted_users (
            user_id TEXT PRIMARY KEY, deleted_at INTEGER NOT NULL, applied_at INTEGER NOT NULL) WITHOUT ROWID;
        CREATE INDEX due_deferred_by_recipient ON due_work (recipient) WHERE type = 'deferred';
        """,
        // 13: dead devices and invalidations by time, for the purge to find those older than the
        // retention without reading every device.
        """
        CREATE INDEX devices_by_invalidation ON devices (invalidated_at) WHERE invalidated_at IS NOT NULL;
        CREATE INDEX invalid_tokens_by_time ON invalid_tokens (invalidated_at);
        """,
        // 14: each window records the last journal row its count includes, and journal row ids are
        // never reused (AUTOINCREMENT), so a fold can write its windows over several transactions
        // (see ThrottleCounts). Windows stored before hold no journal row's entries (0).
        """
        ALTER TABLE throttle_windows ADD COLUMN counted_through INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE throttle_journal RENAME TO throttle_journal_13;
        CREATE TABLE throttle_journal (id INTEGER PRIMARY KEY AUTOINCREMENT, entries BLOB NOT NULL);
        INSERT INTO throttle_journal SELECT id, entries FROM throttle_journal_13;
        DROP TABLE throttle_journal_13;
        """,
        // 15: the worker keys an event without a `time` by its record's timestamp, no longer at time
        // 0. The entries it decided at time 0 answer redeliveries until purged, as migration 10's do:
        // a horizon, unless that migration's already reaches past them. (They are the key's
        // leading range: finding them reads no more of the ledger than they are.)
        """
        INSERT INTO decisions_legacy_horizon SELECT max(decided_at) FROM decisions WHERE event_time = 0
            HAVING count(*) > 0
                AND max(decided_at) > (SELECT coalesce(max(decided_at), -1) FROM decisions_legacy_horizon);
        """,
        // 16: digest items are appended without an index, their ids never reused (AUTOINCREMENT),
        // and indexed by digest in bulk (see DigestBuffer): digest_index holds the items up to
        // digest_folded.through. A worker older than this finds no items for a digest: once a
        // database is at 16, run no older worker on it.
        """
        CREATE TABLE digest_items_16 (
            id INTEGER PRIMARY KEY AUTOINCREMENT, recipient TEXT NOT NULL, rule TEXT NOT NULL,
            window_start INTEGER NOT NULL, event_id TEXT NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL,
            added_at INTEGER NOT NULL);
        INSERT INTO digest_items_16 SELECT id, recipient, rule, window_start, event_id, kind, payload, added_at
            FROM digest_items;
        DROP TABLE digest_items;
        ALTER TABLE digest_items_16 RENAME TO digest_items;
        CREATE TABLE digest_index (
            recipient TEXT NOT NULL, rule TEXT NOT NULL, window_start INTEGER NOT NULL, id INTEGER NOT NULL,
            PRIMARY KEY (recipient, rule, window_start, id)) WITHOUT ROWID;
        INSERT INTO digest_index SELECT recipient, rule, window_start, id FROM digest_items
            ORDER BY recipient, rule, window_start, id;
        CREATE TABLE digest_folded (through INTEGER NOT NULL);
        INSERT INTO digest_folded SELECT coalesce(max(id), 0) FROM digest_items;
        """,
    ]

    /// Opens (or creates) the database at `path` and migrates it to the current schema.
    ///
    /// - Parameter directoryCache: how many users' recipient records to keep in memory between
    ///   lookups; 0 reads every lookup from the database.
    /// - Parameter memoryMapMegabytes: how much of the file is read through a memory map; 0 reads
    ///   pages with `pread`. Mapped pages count in the process's resident memory.
    /// - Parameter pageCacheMegabytes: the most memory SQLite's page cache holds.
    /// - Throws: ``StoreError`` `.open` or `.migration`.
    /// - Parameter synchronous: when a commit reaches the disk.
    /// - Parameter maximumDevicesPerUser: the most devices kept for one user.
    public convenience init(
        path: String,
        directoryCache: Int = SQLiteStore.defaultDirectoryCacheCapacity,
        memoryMapMegabytes: Int = SQLiteStore.defaultMemoryMapMegabytes,
        pageCacheMegabytes: Int = SQLiteStore.defaultPageCacheMegabytes,
        synchronous: Synchronous = .full,
        maximumDevicesPerUser: Int = DirectoryLimits.maximumDevicesPerUser
    ) throws(StoreError) {
        try self.init(
            connection: SQLiteConnection(
                path: path,
                memoryMapMegabytes: memoryMapMegabytes,
                pageCacheMegabytes: pageCacheMegabytes,
                synchronous: synchronous
            ),
            directoryCache: directoryCache,
            maximumDevicesPerUser: maximumDevicesPerUser
        )
    }

    init(
        connection: SQLiteConnection,
        directoryCache: Int = SQLiteStore.defaultDirectoryCacheCapacity,
        throttleFoldThreshold: Int = SQLiteStore.throttleFoldThreshold,
        throttleFoldSlice: Int = SQLiteStore.throttleFoldSlice,
        digestFoldThreshold: Int = SQLiteStore.digestFoldThreshold,
        maximumDevicesPerUser: Int = DirectoryLimits.maximumDevicesPerUser
    ) throws(StoreError) {
        self.connection = connection
        self.maximumDevicesPerUser = max(maximumDevicesPerUser, 1)
        self.cache = RecipientCache(capacity: max(directoryCache, 0))
        self.cacheCapacity = max(directoryCache, 0)
        self.throttle = ThrottleCounts(foldThreshold: throttleFoldThreshold, minimumSlice: throttleFoldSlice)
        self.digests = DigestBuffer(foldThreshold: digestFoldThreshold)
        try Self.migrate(connection)
    }

    /// The migration that gives `recipient_records` its current shape: it is filled in Swift, from
    /// the directory. (Migration 8's table is left empty: its shape is gone by the end of 9.)
    static let recipientRecordsVersion = 9

    /// Applies the migrations after the database's version, up to `target`.
    ///
    /// - Throws: ``StoreError`` `.migration` also for a database a newer Herald migrated past the
    ///   schema this one knows: what the newer schema keeps where this one does not look (digest
    ///   items not yet indexed, from migration 16) would be passed over, not read.
    static func migrate(_ connection: SQLiteConnection, to target: Int = migrations.count) throws(StoreError) {
        var version: Int64 = 0
        try connection.query("PRAGMA user_version") { row in version = row.integer(0) }
        if version > migrations.count {
            throw StoreError(
                code: .storeMigration,
                message:
                    "the database is at schema version \(version), written by a newer Herald; this one knows versions up to \(migrations.count): run a Herald at least as new as the one that migrated it"
            )
        }
        guard version < target else { return }
        for (index, sql) in migrations.enumerated().prefix(target).dropFirst(Int(version)) {
            do {
                try connection.transaction { () throws(StoreError) in
                    try connection.execute(sql)
                    if index + 1 == recipientRecordsVersion { try rebuildRecipientRecords(connection) }
                    try connection.execute("PRAGMA user_version = \(index + 1)")
                }
            } catch {
                throw StoreError(code: .storeMigration, message: "migration \(index + 1): \(error.message)")
            }
        }
    }

    func run<R: Sendable>(
        _ body: @escaping @Sendable (SQLiteConnection) throws(StoreError) -> R
    ) async throws(StoreError) -> R {
        let connection = self.connection
        let result: Result<R, StoreError> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: Result { () throws(StoreError) in try body(connection) })
            }
        }
        return try result.get()
    }

    @discardableResult
    public func apply(_ events: [DirectoryEvent]) async throws(StoreError) -> AppliedChanges {
        let limit = maximumDevicesPerUser
        return try await run { connection throws(StoreError) in
            // Cached users are dropped before the transaction commits: nothing else runs on the
            // queue in between, and dropping a user whose change then rolls back costs one lookup.
            // Once it has committed, the recipients it wrote records of are offered back to the
            // cache (the records say what they do: RecipientRecordTests), so a changed user's next
            // event finds them there, not in SQLite.
            var written: [(userID: OpaqueID, recipient: Recipient?)] = []
            let changes = try connection.transaction { () throws(StoreError) -> AppliedChanges in
                // Under the write lock (BEGIN IMMEDIATE): no other connection commits between this
                // check and the commit, so the records offered below are the file's latest.
                try self.checkCacheVersion(connection)
                var touched = Set<OpaqueID>()
                for event in events {
                    try Self.apply(event, connection) { userID in touched.insert(OpaqueID(userID)) }
                }
                var applied = AppliedChanges()
                for userID in DirectoryLimits.registeringUsers(events) {
                    try Self.evictDevices(of: userID, beyond: limit, connection) {
                        applied.evicted.append(userID)
                        touched.insert(OpaqueID(userID))
                    }
                }
                // The users the cache held are offered first, into the slots they leave here: a
                // change never takes a slot from a user look-ups chose for one they did not.
                var held: [OpaqueID] = []
                var others: [OpaqueID] = []
                for userID in touched {
                    if self.cache.invalidate(userID) { held.append(userID) } else { others.append(userID) }
                }
                let recipients = try Self.refreshRecipientRecords(touched.map(\.string), connection)
                written = (held + others).map { ($0, recipients[$0]) }
                return applied
            }
            for (userID, recipient) in written {
                self.cache.offer(recipient.map { .present($0) } ?? .absent, for: userID.string)
            }
            self.noteCachedUsers()
            return changes
        }
    }

    /// Forgets every cached user, as a start does (`herald bench pipeline --cold-directory-cache`).
    package func emptyDirectoryCache() async throws(StoreError) {
        try await run { _ throws(StoreError) in
            self.cache.removeAll()
            self.noteCachedUsers()
        }
    }

    /// Drops every cached user if another connection (another process) has committed since the
    /// cache was filled: any of them may have changed. On `queue`.
    func checkCacheVersion(_ connection: SQLiteConnection) throws(StoreError) {
        var version: Int64 = 0
        try connection.query("PRAGMA data_version") { row in version = row.integer(0) }
        if cache.dataVersion != version {
            cache.removeAll()
            cache.dataVersion = version
        }
    }

    /// Deletes `userID`'s devices beyond the `limit` most recently registered (the worker's order:
    /// by registration, then device id), invalidated ones included; `evicted` is called for each.
    static func evictDevices(
        of userID: String,
        beyond limit: Int,
        _ connection: SQLiteConnection,
        evicted: () -> Void
    ) throws(StoreError) {
        // The user's devices are read in key order and sorted here, and only a user over the limit
        // deletes any. One `DELETE … IN (SELECT … ORDER BY registered_at … OFFSET ?)` did it in a
        // statement, but SQLite sorted it in a temporary B-tree made for each run (created, its
        // pages zeroed, dropped) whether or not the user had a device too many: a third of what
        // applying a registration cost (`scripts/instructions-per-event directory`: 148,405 →
        // 97,460 instructions per device).
        var devices: [(registeredAt: Int64, deviceID: String)] = []
        try connection.query(
            "SELECT registered_at, device_id FROM devices WHERE user_id = ?",
            [.text(userID)]
        ) { row in devices.append((row.integer(0), row.text(1) ?? "")) }
        guard devices.count > limit else { return }
        // Newest first, by registration then device id, compared as Swift compares them: the order
        // the worker keeps devices in, and the memory store's.
        devices.sort { ($0.registeredAt, $0.deviceID) > ($1.registeredAt, $1.deviceID) }
        for device in devices[limit...] {
            try connection.query(
                "DELETE FROM devices WHERE user_id = ? AND device_id = ?",
                [.text(userID), .text(device.deviceID)]
            )
            evicted()
        }
    }

    /// Applies one change; `touched` is called with each user whose recipient record it may change.
    static func apply(
        _ event: DirectoryEvent,
        _ connection: SQLiteConnection,
        touched: (String) -> Void
    ) throws(StoreError) {
        switch event {
        case .deviceRegistered(let device):
            guard try !deleted(device.userID, asOf: device.at, connection) else { return }
            let at = device.at.epochMilliseconds
            let provider = device.provider.rawValue
            // The device that holds the token now, if another one does (a token is unique, so at
            // most one). Found first and deleted by its key only if there is one: a `DELETE …
            // RETURNING` ran for every registration, and SQLite buffers what it returns in a
            // temporary B-tree it makes (and zeroes a page for) each time.
            var holder: (userID: String, deviceID: String, registeredAt: Int64)?
            try connection.query(
                """
                SELECT user_id, device_id, registered_at FROM devices WHERE provider = ? AND token = ?
                    AND NOT (user_id = ? AND device_id = ?)
                """,
                [.text(provider), .text(device.token), .text(device.userID), .text(device.deviceID)]
            ) { row in holder = (row.text(0) ?? "", row.text(1) ?? "", row.integer(2)) }
            // A newer registration of the same token elsewhere wins over this one.
            if let holder, holder.registeredAt > at { return }
            touched(device.userID)
            // The token moves: it leaves whatever user or device had it before.
            if let holder {
                try connection.query(
                    "DELETE FROM devices WHERE user_id = ? AND device_id = ?",
                    [.text(holder.userID), .text(holder.deviceID)]
                )
                touched(holder.userID)
            }
            // An invalidation at or after this registration still applies to it.
            try connection.query(
                """
                INSERT INTO devices (user_id, device_id, platform, provider, token, app_id, sandbox, locale, registered_at,
                    invalidated_at)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,
                    (SELECT invalidated_at FROM invalid_tokens WHERE provider = ?4 AND token = ?5 AND invalidated_at >= ?9))
                ON CONFLICT (user_id, device_id) DO UPDATE SET platform = excluded.platform, provider = excluded.provider,
                    token = excluded.token, app_id = excluded.app_id, sandbox = excluded.sandbox, locale = excluded.locale,
                    registered_at = excluded.registered_at, invalidated_at = excluded.invalidated_at
                WHERE excluded.registered_at >= devices.registered_at
                """,
                [
                    .text(device.userID), .text(device.deviceID), .text(device.platform), .text(provider),
                    .text(device.token), .text(device.appID), .integer(device.sandbox ? 1 : 0),
                    device.locale.map { .text($0) } ?? .null, .integer(at),
                ]
            )
        case .deviceUnregistered(let userID, let deviceID, let at):
            touched(userID)
            try connection.query(
                "DELETE FROM devices WHERE user_id = ? AND device_id = ? AND registered_at <= ?",
                [.text(userID), .text(deviceID), .integer(at.epochMilliseconds)]
            )
        case .tokenInvalidated(let provider, let token, let at):
            let values: [SQLiteConnection.Value] = [
                .text(provider.rawValue), .text(token), .integer(at.epochMilliseconds),
            ]
            try connection.query(
                """
                INSERT INTO invalid_tokens (provider, token, invalidated_at) VALUES (?, ?, ?)
                ON CONFLICT (provider, token) DO UPDATE SET invalidated_at = max(invalidated_at, excluded.invalidated_at)
                """,
                values
            )
            // The holder is found first and updated only if there is one, as for a registration:
            // not through `RETURNING`'s temporary B-tree.
            var holder: String?
            try connection.query(
                "SELECT user_id FROM devices WHERE provider = ?1 AND token = ?2 AND registered_at <= ?3",
                values
            ) { row in holder = row.text(0) ?? "" }
            if let holder {
                try connection.query(
                    """
                    UPDATE devices SET invalidated_at = max(coalesce(invalidated_at, ?3), ?3)
                    WHERE provider = ?1 AND token = ?2 AND registered_at <= ?3
                    """,
                    values
                )
                touched(holder)
            }
        case .profileUpdated(let userID, let locale, let timeZone, let at):
            guard try !deleted(userID, asOf: at, connection) else { return }
            touched(userID)
            try connection.query(
                """
                INSERT INTO users (user_id, locale, time_zone, profile_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (user_id) DO UPDATE SET locale = coalesce(excluded.locale, users.locale),
                    time_zone = coalesce(excluded.time_zone, users.time_zone), profile_at = excluded.profile_at
                WHERE users.profile_at IS NULL OR excluded.profile_at >= users.profile_at
                """,
                [
                    .text(userID), locale.map { .text($0) } ?? .null, timeZone.map { .text($0) } ?? .null,
                    .integer(at.epochMilliseconds),
                ]
            )
        case .preferencesUpdated(let userID, let preferences, let at):
            guard try !deleted(userID, asOf: at, connection) else { return }
            touched(userID)
            try connection.query(
                """
                INSERT INTO users (user_id, preferences, preferences_at) VALUES (?, ?, ?)
                ON CONFLICT (user_id) DO UPDATE SET preferences = excluded.preferences,
                    preferences_at = excluded.preferences_at
                WHERE users.preferences_at IS NULL OR excluded.preferences_at >= users.preferences_at
                """,
                [.text(userID), .text(PreferencesDocument.encode(preferences)), .integer(at.epochMilliseconds)]
            )
        case .userDeleted(let userID, let at):
            touched(userID)
            try deleteUser(userID, at: at.epochMilliseconds, connection)
        }
    }

    public func deletions(_ userIDs: [String]) async throws(StoreError) -> [OpaqueID: Timestamp] {
        try await run { connection throws(StoreError) in
            var found: [OpaqueID: Timestamp] = [:]
            for userID in Set(userIDs.map { OpaqueID($0) }) {
                try connection.query("SELECT deleted_at FROM deleted_users WHERE user_id = ?", [.text(userID.string)]) {
                    row in
                    found[userID] = Timestamp(epochMilliseconds: row.integer(0))
                }
            }
            return found
        }
    }

    /// Whether `userID` was deleted at or after `at`: a change dated then is older than the deletion.
    static func deleted(_ userID: String, asOf at: Timestamp, _ connection: SQLiteConnection) throws(StoreError) -> Bool
    {
        var found = false
        try connection.query(
            "SELECT 1 FROM deleted_users WHERE user_id = ? AND deleted_at >= ?",
            [.text(userID), .integer(at.epochMilliseconds)]
        ) { _ in found = true }
        return found
    }

    /// Erases what the directory holds of `userID` as of `at`, and the notifications waiting for
    /// them, and remembers the deletion until the purge. Registrations, a profile or preferences
    /// dated after `at` (a new start under the same id, applied before this arrived) stay.
    ///
    /// The deletion is remembered for a retention from when it is applied (the database's clock),
    /// not from its date: a worker rebuilding its directory from the compacted topic applies
    /// deletions months old, and must still ignore the older registrations it reads after them.
    static func deleteUser(_ userID: String, at: Int64, _ connection: SQLiteConnection) throws(StoreError) {
        let values: [SQLiteConnection.Value] = [.text(userID), .integer(at)]
        try connection.query(
            """
            INSERT INTO deleted_users (user_id, deleted_at, applied_at)
            VALUES (?, ?, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
            ON CONFLICT (user_id) DO UPDATE SET deleted_at = max(deleted_at, excluded.deleted_at),
                applied_at = excluded.applied_at
            """,
            values
        )
        try connection.query("DELETE FROM devices WHERE user_id = ?1 AND registered_at <= ?2", values)
        try connection.query(
            """
            UPDATE users SET locale = NULL, time_zone = NULL, profile_at = NULL WHERE user_id = ?1 AND profile_at <= ?2
            """,
            values
        )
        try connection.query(
            "UPDATE users SET preferences = NULL, preferences_at = NULL WHERE user_id = ?1 AND preferences_at <= ?2",
            values
        )
        try connection.query(
            "DELETE FROM users WHERE user_id = ? AND profile_at IS NULL AND preferences_at IS NULL",
            [.text(userID)]
        )
        // Waiting notifications hold rendered text about the user. A deferred one whose event has
        // no time (0) is taken as older than the deletion; a digest's items by when they were
        // collected, and a digest with none left goes with them.
        try connection.query(
            "DELETE FROM due_work WHERE type = 'deferred' AND recipient = ?1 AND event_time <= ?2",
            values
        )
        try DigestBuffer.fold(connection)
        try connection.query(
            """
            DELETE FROM digest_items
            WHERE id IN (SELECT id FROM digest_index WHERE recipient = ?1) AND added_at <= ?2
            """,
            values
        )
        try connection.query(
            """
            DELETE FROM digest_index
            WHERE recipient = ? AND NOT EXISTS (SELECT 1 FROM digest_items i WHERE i.id = digest_index.id)
            """,
            [.text(userID)]
        )
        try connection.query(
            """
            DELETE FROM due_work WHERE type = 'digest' AND recipient = ?1 AND NOT EXISTS (
                SELECT 1 FROM digest_index i
                WHERE i.recipient = due_work.recipient AND i.rule = due_work.rule AND i.window_start = due_work.window_start)
            """,
            [.text(userID)]
        )
    }

    /// SQLite's default limit on `?` parameters is 32766; batches are split well below it.
    static let chunkSize = 500

    public func recipients(_ userIDs: [String]) async throws(StoreError) -> [OpaqueID: Recipient] {
        let found = try await recipients(inOrder: userIDs)
        var result: [OpaqueID: Recipient] = [:]
        result.reserveCapacity(userIDs.count)
        for case (let userID, let recipient?) in zip(userIDs, found) { result[OpaqueID(userID)] = recipient }
        return result
    }

    /// How the directory cache has served ``recipients(inOrder:)`` so far (`/metrics`).
    public var directoryCacheStatistics: DirectoryCacheStatistics {
        DirectoryCacheStatistics(
            hits: cacheHits.load(ordering: .relaxed),
            misses: cacheMisses.load(ordering: .relaxed),
            users: cachedUsers.load(ordering: .relaxed),
            capacity: cacheCapacity
        )
    }

    /// Sets the statistics' count of cached users (on `queue`, after the cache changed).
    func noteCachedUsers() {
        cachedUsers.store(cache.count, ordering: .relaxed)
    }

    public func recipients(inOrder userIDs: [String]) async throws(StoreError) -> [Recipient?] {
        try await run { connection throws(StoreError) in
            guard self.cache.isEnabled else {
                self.cacheMisses.add(userIDs.count, ordering: .relaxed)
                let found = try Self.recipients(Set(userIDs.map { OpaqueID($0) }).map(\.string), connection)
                return userIDs.map { found[OpaqueID($0)] }
            }
            try self.checkCacheVersion(connection)
            // A cached user costs one hash of their id (the cache's index): a repeated user is
            // looked up again rather than remembered in a set, which would hash every id once more.
            var result: [Recipient?] = []
            result.reserveCapacity(userIDs.count)
            var missing: [Int] = []
            for (position, userID) in userIDs.enumerated() {
                switch self.cache.lookup(userID) {
                case .present(let recipient): result.append(recipient)
                case .absent: result.append(nil)
                case nil:
                    result.append(nil)
                    missing.append(position)
                }
            }
            self.cacheHits.add(userIDs.count - missing.count, ordering: .relaxed)
            self.cacheMisses.add(missing.count, ordering: .relaxed)
            guard !missing.isEmpty else {
                self.noteCachedUsers()
                return result
            }
            var seen = Set<OpaqueID>()
            let unique = missing.map { userIDs[$0] }.filter { seen.insert(OpaqueID($0)).inserted }
            let loaded = try Self.recipients(unique, connection)
            for userID in unique {
                if let recipient = loaded[OpaqueID(userID)] {
                    self.cache.insert(.present(recipient), for: userID)
                } else {
                    self.cache.insert(.absent, for: userID)
                }
            }
            for position in missing { result[position] = loaded[OpaqueID(userIDs[position])] }
            self.noteCachedUsers()
            return result
        }
    }

    /// The record look-up for `keys` users. Made for each chunk, the statement's text (up to 1,000
    /// bytes) was built, then hashed and compared to find its prepared statement, for every batch:
    /// about 900 instructions per user read. Kept per size instead, found by the size.
    static func recordLookup(keys: Int) -> SQLiteConnection.SQL {
        if let known = recordLookups.withLock({ $0[keys] }) { return known }
        let sql = SQLiteConnection.SQL(
            kept: "SELECT user_id, record FROM recipient_records WHERE user_key IN (\(placeholders(keys)))"
        )
        return recordLookups.withLock { lookups in
            if let known = lookups[keys] { return known }
            lookups[keys] = sql
            return sql
        }
    }

    /// At most ``chunkSize`` statements, made as sizes are first needed and kept for the process's
    /// life (their statements are found by their address).
    private static let recordLookups = Mutex<[Int: SQLiteConnection.SQL]>([:])

    /// `count` comma-separated `?` parameters, for an `IN (…)` list.
    static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ",")
    }

    /// Reads the recipients among `unique` (no duplicates) from their records. Not inside a
    /// transaction: a record that cannot be read is rebuilt in one of its own.
    static func recipients(
        _ unique: [String],
        _ connection: SQLiteConnection
    ) throws(StoreError) -> [OpaqueID: Recipient] {
        var result: [OpaqueID: Recipient] = [:]
        result.reserveCapacity(unique.count)
        var unreadable: [String] = []
        for start in stride(from: 0, to: unique.count, by: Self.chunkSize) {
            let chunk = unique[start..<min(start + Self.chunkSize, unique.count)]
            // A user whose key collides with a requested one's comes back too, and is passed over.
            let wanted = Set(chunk.map { OpaqueID($0) })
            try connection.query(recordLookup(keys: chunk.count), chunk.map { .integer(RecipientRecord.key($0)) }) {
                row in
                let userID = row.text(0) ?? ""
                guard wanted.contains(OpaqueID(userID)) else { return }
                do {
                    result[OpaqueID(userID)] = try RecipientRecord.decode(userID: userID, row.blob(1))
                } catch {
                    unreadable.append(userID)
                }
            }
        }
        // A record only restates devices and users: one that is damaged, or in a layout this
        // build does not know (after a downgrade), is rebuilt from them rather than failing every
        // batch that needs the user.
        if !unreadable.isEmpty {
            let rebuilt = try connection.transaction { () throws(StoreError) in
                try refreshRecipientRecords(unreadable, connection)
            }
            result.merge(rebuilt) { _, rebuilt in rebuilt }
        }
        return result
    }

    /// The recipients as `devices` and `users` describe them, without the records: what the records
    /// must agree with.
    func assembledRecipients(_ userIDs: [String]) async throws(StoreError) -> [OpaqueID: Recipient] {
        try await run { connection throws(StoreError) in
            try Self.assembleRecipients(Set(userIDs.map { OpaqueID($0) }).map(\.string), connection)
        }
    }

    /// Rewrites the records of `userIDs` from `devices` and `users`, and removes those of users the
    /// directory no longer knows, and answers the recipients it wrote. In key order: neighbouring
    /// records share pages.
    @discardableResult
    static func refreshRecipientRecords(
        _ userIDs: [String],
        _ connection: SQLiteConnection
    ) throws(StoreError) -> [OpaqueID: Recipient] {
        let assembled = try assembleRecipients(userIDs, connection)
        let keyed = userIDs.map { (key: RecipientRecord.key($0), userID: $0) }.sorted {
            ($0.key, $0.userID) < ($1.key, $1.userID)
        }
        for (key, userID) in keyed {
            if let recipient = assembled[OpaqueID(userID)] {
                try connection.query(
                    """
                    INSERT INTO recipient_records (user_key, user_id, record) VALUES (?, ?, ?)
                    ON CONFLICT (user_key, user_id) DO UPDATE SET record = excluded.record
                    """,
                    [.integer(key), .text(userID), .blob(RecipientRecord.encode(recipient))]
                )
            } else {
                try connection.query(
                    "DELETE FROM recipient_records WHERE user_key = ? AND user_id = ?",
                    [.integer(key), .text(userID)]
                )
            }
        }
        return assembled
    }

    /// Fills `recipient_records` for every user in the directory (migration 9).
    static func rebuildRecipientRecords(_ connection: SQLiteConnection) throws(StoreError) {
        var keyed: [(key: Int64, userID: String)] = []
        try connection.query("SELECT user_id FROM devices UNION SELECT user_id FROM users") { row in
            let userID = row.text(0) ?? ""
            keyed.append((RecipientRecord.key(userID), userID))
        }
        // In key order across chunks too, so the table is written front to back.
        keyed.sort { ($0.key, $0.userID) < ($1.key, $1.userID) }
        for start in stride(from: 0, to: keyed.count, by: Self.chunkSize) {
            try refreshRecipientRecords(
                keyed[start..<min(start + Self.chunkSize, keyed.count)].map(\.userID),
                connection
            )
        }
    }

    /// The recipients among `unique` (no duplicates) as `devices` and `users` describe them.
    static func assembleRecipients(
        _ unique: [String],
        _ connection: SQLiteConnection
    ) throws(StoreError) -> [OpaqueID: Recipient] {
        var result: [OpaqueID: Recipient] = [:]
        result.reserveCapacity(unique.count)
        for start in stride(from: 0, to: unique.count, by: Self.chunkSize) {
            let chunk = Array(unique[start..<min(start + Self.chunkSize, unique.count)])
            let placeholders = Self.placeholders(chunk.count)
            let values = chunk.map { SQLiteConnection.Value.text($0) }
            try connection.query(
                SQLiteConnection.SQL(
                    built: """
                        SELECT user_id, device_id, platform, provider, token, app_id, sandbox, locale, registered_at
                        FROM devices WHERE user_id IN (\(placeholders)) AND invalidated_at IS NULL
                        """
                ),
                values
            ) { row throws(StoreError) in
                let userID = row.text(0) ?? ""
                guard let provider = PushProvider(rawValue: row.text(3) ?? "") else {
                    throw StoreError(code: .storeQuery, message: "devices: unknown provider")
                }
                let device = RegisteredDevice(
                    deviceID: row.text(1) ?? "",
                    platform: row.text(2) ?? "",
                    provider: provider,
                    token: row.text(4) ?? "",
                    appID: row.text(5) ?? "",
                    sandbox: row.integer(6) != 0,
                    locale: row.text(7),
                    registeredAt: Timestamp(epochMilliseconds: row.integer(8))
                )
                result[OpaqueID(userID), default: Recipient(userID: userID)].devices.append(device)
            }
            try connection.query(
                SQLiteConnection.SQL(
                    built:
                        "SELECT user_id, locale, time_zone, preferences FROM users WHERE user_id IN (\(placeholders))"
                ),
                values
            ) { row in
                let userID = row.text(0) ?? ""
                var recipient = result.removeValue(forKey: OpaqueID(userID)) ?? Recipient(userID: userID)
                recipient.locale = row.text(1)
                recipient.timeZone = row.text(2)
                if let document = row.text(3) { recipient.preferences = PreferencesDocument.decode(document) }
                result[OpaqueID(userID)] = recipient
            }
        }
        Recipient.sortDevices(in: &result)
        return result
    }
}
