import HeraldCatalog
import HeraldKafka
import HeraldStore
import HeraldWorker

/// What a running Herald is made of: its own version and the system libraries whose versions change
/// what it does (librdkafka's group protocol, SQLite's planner, ICU's CLDR formats). `herald
/// --version` prints it, start-up logs it, and `/metrics` exports it as `herald_build_info`, so a
/// rollout can be watched pod by pod and a bug report says what produced the output.
public enum BuildInfo {
    /// Herald's version, as dead letters carry it in `herald.version`.
    public static var version: String { DeadLetter.heraldVersion }

    /// `(name, version)` of Herald and each library, in the order they are printed.
    public static let components: [(name: String, version: String)] = [
        ("version", version), ("librdkafka", Librdkafka.version), ("sqlite", SQLiteStore.libraryVersion),
        ("icu", ICUVersion.library), ("cldr", ICUVersion.data),
    ]

    /// One line for `herald --version`: `0.1.0 (librdkafka 2.0.2, SQLite 3.40.1, ICU 72.1, CLDR 42.0)`.
    public static let summary =
        "\(version) (librdkafka \(Librdkafka.version), SQLite \(SQLiteStore.libraryVersion), "
        + "ICU \(ICUVersion.library), CLDR \(ICUVersion.data))"

    /// The `herald_build_info` gauge, always 1, its labels the components: joined on `instance` in a
    /// query, it says which version each process runs. Made once: the versions cannot change while
    /// the process runs.
    public static let metricLines: String = {
        let labels = components.map { "\($0.name)=\"\(WorkerMetrics.escape($0.version))\"" }.joined(separator: ",")
        return """
            # HELP herald_build_info Herald's version and the versions of the libraries it runs with; always 1.
            # TYPE herald_build_info gauge
            herald_build_info{\(labels)} 1

            """
    }()
}
