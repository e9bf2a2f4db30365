/// How SQLite's directory cache (``RecipientCache``, `store.directory_cache`) has served the
/// worker's look-ups: the `herald_directory_cache_*` metrics. A directory larger than the cache
/// reads most users from the database on every batch, which ran `herald bench pipeline` a quarter
/// slower (docs/benchmarks.md): the hit ratio tells an operator when to give the cache more users.
public struct DirectoryCacheStatistics: Sendable, Equatable {
    /// Users looked up whom the cache answered for (a known user, or one known to be absent),
    /// counted at every place a batch asks for them.
    public var hits: Int
    /// Users looked up whom it did not, read from the database: a user a batch asks for twice
    /// counts twice, though read once.
    public var misses: Int
    /// Users it held after the last look-up or change to the directory.
    public var users: Int
    /// The most users it holds (`store.directory_cache`; 0: no cache).
    public var capacity: Int

    public init(hits: Int, misses: Int, users: Int, capacity: Int) {
        self.hits = hits
        self.misses = misses
        self.users = users
        self.capacity = capacity
    }

    /// The `herald_directory_cache_*` families in Prometheus' text exposition format.
    public var metricLines: String {
        var text = "# HELP herald_directory_cache_lookups_total Users the worker looked up in the directory, "
        text += "by whether SQLite's directory cache had them (store.directory_cache).\n"
        text += "# TYPE herald_directory_cache_lookups_total counter\n"
        text += "herald_directory_cache_lookups_total{result=\"hit\"} \(hits)\n"
        text += "herald_directory_cache_lookups_total{result=\"miss\"} \(misses)\n"
        text += "# HELP herald_directory_cache_users Users SQLite's directory cache holds.\n"
        text += "# TYPE herald_directory_cache_users gauge\n"
        text += "herald_directory_cache_users \(users)\n"
        text += "# HELP herald_directory_cache_capacity The most users SQLite's directory cache holds "
        text += "(store.directory_cache).\n"
        text += "# TYPE herald_directory_cache_capacity gauge\n"
        text += "herald_directory_cache_capacity \(capacity)\n"
        return text
    }
}
