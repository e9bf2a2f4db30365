#if canImport(Glibc)
import Glibc
#endif

/// What this process (or its waited-for children) has used so far, from `getrusage`: the
/// benchmarks report CPU time next to wall time, since on a shared host the two part ways.
public enum ProcessUsage {
    /// User and system CPU seconds of this process (`RUSAGE_SELF`) or of its children.
    public static func cpuSeconds(_ who: __rusage_who = RUSAGE_SELF) -> Double {
        var usage = rusage()
        getrusage(Int32(who.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// This process's peak resident memory so far, in megabytes.
    public static func peakResidentMegabytes() -> Double {
        var usage = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_maxrss) / 1024
    }
}
