import CHeraldICU

/// Plural categories from ICU's rules (CLDR data).
enum ICUPluralRules {
    /// The category (`zero`, `one`, `two`, `few`, `many`, `other`) of `number` in `locale`.
    static func category(of number: Double, locale: String, ordinal: Bool = false) -> String {
        withGrowingBuffer(initialCapacity: 16) { output, capacity in
            herald_plural_category(locale, number, ordinal ? 1 : 0, output, capacity) == 0
                ? Int32(strlenOf(output)) : -1
        } ?? "other"
    }

    private static func strlenOf(_ text: UnsafeMutablePointer<CChar>) -> Int {
        var length = 0
        while text[length] != 0 { length += 1 }
        return length
    }
}

/// Formats numbers, or money in one currency, for one locale. Immutable and thread-safe.
final class ICUNumberFormatter: @unchecked Sendable {
    // @unchecked: ICU's LocalizedNumberFormatter is immutable and thread-safe.
    private let handle: OpaquePointer

    /// - Parameters:
    ///   - locale: a BCP 47 tag.
    ///   - currency: an ISO 4217 code for money, or `nil` for plain numbers.
    ///   - pattern: an ICU decimal pattern overriding the locale's (such as `#,##0.00 ¤`), keeping
    ///     the locale's symbols; `nil` for the locale's own.
    init(locale: String, currency: String?, pattern: String? = nil) throws(ICUError) {
        var error = herald_icu_error()
        guard let handle = herald_number_formatter_open(locale, currency, pattern, &error) else {
            throw ICUError(error)
        }
        self.handle = handle
    }

    deinit {
        herald_number_formatter_close(handle)
    }

    /// Formats an exact decimal such as "1234.50".
    func format(decimal: String) throws(ICUError) -> String {
        var error = herald_icu_error()
        var decimal = decimal
        let text = decimal.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                withGrowingBuffer(initialCapacity: 64) { output, capacity in
                    herald_number_format_decimal(
                        handle,
                        chars.baseAddress,
                        Int32(chars.count),
                        output,
                        capacity,
                        &error
                    )
                }
            }
        }
        guard let text else { throw ICUError(error) }
        return text
    }
}

/// Formats moments for one locale, time zone and style. Thread-safe (ICU calendars are mutable, so
/// the C layer serializes calls).
final class ICUDateFormatter: @unchecked Sendable {
    // @unchecked: every call into the ICU object goes through the C layer's lock.
    private let handle: OpaquePointer

    /// - Parameters:
    ///   - locale: a BCP 47 tag.
    ///   - timeZone: an IANA time zone such as `Europe/Oslo`.
    ///   - style: `short`, `medium`, `long`, `full`, or an ICU skeleton such as `yMMMdjmm`.
    init(locale: String, timeZone: String, style: String) throws(ICUError) {
        var error = herald_icu_error()
        guard let handle = herald_date_formatter_open(locale, timeZone, style, &error) else { throw ICUError(error) }
        self.handle = handle
    }

    deinit {
        herald_date_formatter_close(handle)
    }

    /// Formats a moment given in milliseconds since the Unix epoch.
    func format(epochMilliseconds: Double) -> String {
        var error = herald_icu_error()
        return withGrowingBuffer(initialCapacity: 128) { output, capacity in
            herald_date_format(handle, epochMilliseconds, output, capacity, &error)
        } ?? ""
    }
}
