import CHeraldICU

/// The ICU library the catalog formats with, and the CLDR data it carries: plural rules, number,
/// money and date formats follow that data, so a report of a wrong rendering needs both
/// (`herald --version`, `herald_build_info`).
public enum ICUVersion {
    /// ICU's version, such as `72.1`.
    public static var library: String { versions.library }
    /// The CLDR data's version, such as `42.0`.
    public static var data: String { versions.data }

    private static let versions: (library: String, data: String) = {
        // U_MAX_VERSION_STRING_LENGTH is 20: "255.255.255.255" and its NUL fit.
        let capacity = 32
        var library = [CChar](repeating: 0, count: capacity)
        var data = [CChar](repeating: 0, count: capacity)
        herald_icu_versions(&library, &data, Int32(capacity))
        return (string(library), string(data))
    }()

    private static func string(_ text: [CChar]) -> String {
        String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
