// The C API of herald_icu.h over ICU4C. Every ICU object is created once, at catalog load, and reused.

#include "herald_icu.h"

#include <unicode/datefmt.h>
#include <unicode/decimfmt.h>
#include <unicode/dcfmtsym.h>
#include <unicode/gregocal.h>
#include <unicode/locid.h>
#include <unicode/messagepattern.h>
#include <unicode/msgfmt.h>
#include <unicode/numberformatter.h>
#include <unicode/plurrule.h>
#include <unicode/smpdtfmt.h>
#include <unicode/timezone.h>
#include <unicode/ulocdata.h>
#include <unicode/uversion.h>
#include <unicode/bytestream.h>
#include <unicode/unistr.h>
#include <unicode/utypes.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

using icu::UnicodeString;

namespace {

void set_error(herald_icu_error *error, const std::string &message, int32_t offset = -1) {
    if (error == nullptr) return;
    std::strncpy(error->message, message.c_str(), sizeof(error->message) - 1);
    error->message[sizeof(error->message) - 1] = '\0';
    error->offset = offset;
}

void set_error(herald_icu_error *error, const char *what, UErrorCode status, int32_t offset = -1) {
    set_error(error, std::string(what) + ": " + u_errorName(status), offset);
}

/// Copies UTF-8 into `output` (NUL-terminated when it fits) and returns the length it needs.
int32_t copy_out(const std::string &text, char *output, int32_t capacity) {
    int32_t length = static_cast<int32_t>(text.size());
    if (output != nullptr && capacity > 0) {
        int32_t count = length < capacity - 1 ? length : capacity - 1;
        std::memcpy(output, text.data(), static_cast<size_t>(count));
        output[count] = '\0';
    }
    return length;
}

/// Writes UTF-8 straight into `output` (NUL-terminated when it fits) and returns the length it
/// needs; only a result that does not fit goes through a temporary string to learn its length.
int32_t copy_out(const UnicodeString &text, char *output, int32_t capacity) {
    if (output != nullptr && capacity > 1) {
        icu::CheckedArrayByteSink sink(output, capacity - 1);
        text.toUTF8(sink);
        if (!sink.Overflowed()) {
            int32_t length = sink.NumberOfBytesWritten();
            output[length] = '\0';
            return length;
        }
    }
    std::string utf8;
    text.toUTF8String(utf8);
    return copy_out(utf8, output, capacity);
}

/// A locale from a BCP 47 tag ("nb-NO"); an invalid tag yields the root locale.
icu::Locale make_locale(const char *locale) {
    UErrorCode status = U_ZERO_ERROR;
    icu::Locale result = icu::Locale::forLanguageTag(locale == nullptr ? "und" : locale, status);
    return U_FAILURE(status) ? icu::Locale::getRoot() : result;
}

struct ArgumentUse {
    std::string name;
    herald_argument_kind kind;
    std::string keywords;
    bool guarded = false;
};

/// A complex argument (select, plural, ...) the part iteration is inside of.
struct Enclosing {
    std::string name;
    UMessagePatternArgType type;
    std::string selector;
    int32_t limit;
};

} // namespace

struct herald_message {
    std::unique_ptr<icu::MessageFormat> format;
    std::vector<ArgumentUse> arguments;
    // MessageFormat::format is const but creates and caches sub-formatters lazily.
    std::mutex lock;
};

extern "C" herald_message *herald_message_open(const char *locale, const char *pattern, int32_t pattern_length,
                                               herald_icu_error *error) {
    UErrorCode status = U_ZERO_ERROR;
    UParseError parse_error{};
    UnicodeString text = UnicodeString::fromUTF8(icu::StringPiece(pattern, pattern_length));
    icu::MessagePattern inspected(text, &parse_error, status);
    if (U_FAILURE(status)) {
        // parse_error.offset counts UTF-16 units; report it in UTF-8 bytes.
        std::string prefix;
        text.tempSubString(0, parse_error.offset).toUTF8String(prefix);
        std::string context;
        UnicodeString(parse_error.preContext).toUTF8String(context);
        set_error(error, std::string("invalid MessageFormat syntax near \"") + context + "\" (" + u_errorName(status) + ")",
                  static_cast<int32_t>(prefix.size()));
        return nullptr;
    }
    if (inspected.hasNumberedArguments()) {
        set_error(error, "numbered arguments like {0} are not allowed; use field names like {orderId}");
        return nullptr;
    }
    auto message = std::make_unique<herald_message>();
    int32_t parts = inspected.countParts();
    std::vector<Enclosing> stack;
    for (int32_t index = 0; index < parts; ++index) {
        const icu::MessagePattern::Part &part = inspected.getPart(index);
        while (!stack.empty() && index > stack.back().limit) stack.pop_back();
        if (part.getType() == UMSGPAT_PART_TYPE_ARG_SELECTOR && !stack.empty()) {
            stack.back().selector.clear();
            inspected.getSubstring(part).toUTF8String(stack.back().selector);
            continue;
        }
        if (part.getType() != UMSGPAT_PART_TYPE_ARG_START) continue;
        ArgumentUse use;
        std::string name;
        inspected.getSubstring(inspected.getPart(index + 1)).toUTF8String(name);
        use.name = name;
        for (const Enclosing &enclosing : stack) {
            if (enclosing.type == UMSGPAT_ARG_TYPE_SELECT && enclosing.name == name && enclosing.selector != "absent") {
                use.guarded = true;
            }
        }
        UMessagePatternArgType argType = part.getArgType();
        if (argType == UMSGPAT_ARG_TYPE_SELECT || argType == UMSGPAT_ARG_TYPE_PLURAL ||
            argType == UMSGPAT_ARG_TYPE_SELECTORDINAL || argType == UMSGPAT_ARG_TYPE_CHOICE) {
            stack.push_back(Enclosing{name, argType, "", inspected.getLimitPartIndex(index)});
        }
        switch (part.getArgType()) {
        case UMSGPAT_ARG_TYPE_NONE:
            use.kind = HERALD_ARGUMENT_SIMPLE;
            break;
        case UMSGPAT_ARG_TYPE_SIMPLE: {
            std::string type;
            inspected.getSubstring(inspected.getPart(index + 2)).toUTF8String(type);
            use.kind = type == "number" ? HERALD_ARGUMENT_NUMBER
                       : type == "date" ? HERALD_ARGUMENT_DATE
                       : type == "time" ? HERALD_ARGUMENT_TIME
                                        : HERALD_ARGUMENT_OTHER;
            break;
        }
        case UMSGPAT_ARG_TYPE_PLURAL:
            use.kind = HERALD_ARGUMENT_PLURAL;
            break;
        case UMSGPAT_ARG_TYPE_SELECTORDINAL:
            use.kind = HERALD_ARGUMENT_SELECTORDINAL;
            break;
        case UMSGPAT_ARG_TYPE_SELECT: {
            use.kind = HERALD_ARGUMENT_SELECT;
            // The selectors directly inside this argument: each is followed by its sub-message.
            int32_t limit = inspected.getLimitPartIndex(index);
            for (int32_t inner = index + 2; inner < limit; ++inner) {
                const icu::MessagePattern::Part &candidate = inspected.getPart(inner);
                if (candidate.getType() == UMSGPAT_PART_TYPE_ARG_SELECTOR) {
                    std::string keyword;
                    inspected.getSubstring(candidate).toUTF8String(keyword);
                    if (!use.keywords.empty()) use.keywords += ",";
                    use.keywords += keyword;
                } else if (candidate.getType() == UMSGPAT_PART_TYPE_MSG_START) {
                    inner = inspected.getLimitPartIndex(inner);
                }
            }
            break;
        }
        default:
            use.kind = HERALD_ARGUMENT_OTHER;
        }
        message->arguments.push_back(use);
    }
    message->format = std::make_unique<icu::MessageFormat>(text, make_locale(locale), parse_error, status);
    if (U_FAILURE(status)) {
        set_error(error, "invalid MessageFormat", status, parse_error.offset);
        return nullptr;
    }
    return message.release();
}

extern "C" void herald_message_close(herald_message *message) { delete message; }

extern "C" int32_t herald_message_argument_count(const herald_message *message) {
    return static_cast<int32_t>(message->arguments.size());
}

extern "C" void herald_message_argument(const herald_message *message, int32_t index, char *name,
                                        int32_t name_capacity, herald_argument_kind *kind, char *keywords,
                                        int32_t keywords_capacity, int32_t *guarded) {
    const ArgumentUse &use = message->arguments[static_cast<size_t>(index)];
    copy_out(use.name, name, name_capacity);
    *kind = use.kind;
    copy_out(use.keywords, keywords, keywords_capacity);
    *guarded = use.guarded ? 1 : 0;
}

extern "C" int32_t herald_message_format(const herald_message *message, const herald_argument *arguments,
                                         int32_t count, char *output, int32_t capacity,
                                         herald_icu_error *error) {
    // Messages have few arguments: keep them on the stack unless there are many.
    constexpr int32_t inline_capacity = 16;
    UnicodeString inline_names[inline_capacity];
    icu::Formattable inline_values[inline_capacity];
    std::vector<UnicodeString> heap_names;
    std::vector<icu::Formattable> heap_values;
    UnicodeString *names = inline_names;
    icu::Formattable *values = inline_values;
    if (count > inline_capacity) {
        heap_names.resize(static_cast<size_t>(count));
        heap_values.resize(static_cast<size_t>(count));
        names = heap_names.data();
        values = heap_values.data();
    }
    for (int32_t index = 0; index < count; ++index) {
        const herald_argument &argument = arguments[index];
        names[index] = UnicodeString::fromUTF8(argument.name);
        switch (argument.kind) {
        case HERALD_VALUE_STRING:
            values[index].setString(UnicodeString::fromUTF8(icu::StringPiece(argument.string, argument.string_length)));
            break;
        case HERALD_VALUE_DOUBLE:
            values[index].setDouble(argument.number);
            break;
        case HERALD_VALUE_INT64:
            values[index].setInt64(static_cast<int64_t>(argument.integer));
            break;
        case HERALD_VALUE_DECIMAL: {
            UErrorCode status = U_ZERO_ERROR;
            values[index].setDecimalNumber(icu::StringPiece(argument.string, argument.string_length), status);
            if (U_FAILURE(status)) {
                set_error(error, std::string("argument ") + argument.name + " is not a decimal number");
                return -1;
            }
            break;
        }
        }
    }
    UErrorCode status = U_ZERO_ERROR;
    UnicodeString result;
    {
        std::lock_guard<std::mutex> guard(const_cast<herald_message *>(message)->lock);
        message->format->format(names, values, count, result, status);
    }
    if (U_FAILURE(status)) {
        set_error(error, "format", status);
        return -1;
    }
    return copy_out(result, output, capacity);
}

extern "C" int32_t herald_plural_category(const char *locale, double number, int32_t ordinal, char *category,
                                          int32_t capacity) {
    UErrorCode status = U_ZERO_ERROR;
    std::unique_ptr<icu::PluralRules> rules(icu::PluralRules::forLocale(
        make_locale(locale), ordinal ? UPLURAL_TYPE_ORDINAL : UPLURAL_TYPE_CARDINAL, status));
    if (U_FAILURE(status)) return -1;
    copy_out(rules->select(number), category, capacity);
    return 0;
}

namespace {

/// A formatter's id, for the memo below: unique for the life of the process, unlike its address.
std::atomic<uint64_t> next_formatter_id{1};

/// Values a thread formatted lately, and their text: the same value is often formatted many times
/// over (one event's recipients share a locale; a campaign's events share a price or an end
/// date), and formatting in ICU costs microseconds where this look-up costs nanoseconds. Per thread,
/// so that a hit takes no lock; keyed by the formatter's id, so that a formatter freed and another
/// made at its address cannot be answered with the first one's text.
template <typename Input> struct RecentlyFormatted {
    struct Entry {
        uint64_t formatter = 0;  // 0: empty
        Input input{};
        std::string output;
    };
    // Room for a few values in each of a catalog's locales: with 8 entries, the example catalog's
    // prices in five locales pushed each other out, and 44% of number formats still reached ICU.
    static constexpr size_t capacity = 32;
    Entry entries[capacity];
    size_t next = 0;

    const std::string *find(uint64_t formatter, const Input &input) const {
        for (const Entry &entry : entries) {
            if (entry.formatter == formatter && entry.input == input) return &entry.output;
        }
        return nullptr;
    }

    /// Replaces the oldest entry with `output` of `input`, and returns the stored text.
    const std::string &remember(uint64_t formatter, const Input &input, const UnicodeString &output) {
        Entry &entry = entries[next];
        next = (next + 1) % capacity;
        entry.formatter = formatter;
        entry.input = input;
        entry.output.clear();
        output.toUTF8String(entry.output);
        return entry.output;
    }
};

/// A moment as a date formatter sees it: for a pattern whose finest field is coarser than a
/// millisecond, the local day, hour, minute or second it falls in and the zone's offset then
/// (all that such a pattern's text depends on), so that the moments of one minute share an
/// entry; otherwise the moment itself.
struct DateKey {
    double instant = 0;
    int64_t slot = 0;
    int32_t offset = 0;

    bool operator==(const DateKey &other) const {
        return instant == other.instant && slot == other.slot && offset == other.offset;
    }
};

thread_local RecentlyFormatted<std::string> recent_numbers;
thread_local RecentlyFormatted<DateKey> recent_dates;

/// The span of time a pattern's text can tell apart, in milliseconds: a day for a date without a
/// time, an hour, a minute or a second for a time shown to that precision; 1 (every moment its
/// own) when it shows fractions of a second, day periods or a time zone, or a letter not listed.
int64_t pattern_unit(const UnicodeString &pattern) {
    constexpr int64_t day = 86400000, hour = 3600000, minute = 60000, second = 1000;
    int64_t unit = day;
    bool quoted = false;
    for (int32_t index = 0; index < pattern.length(); index++) {
        char16_t letter = pattern.charAt(index);
        if (letter == u'\'') {
            quoted = !quoted;
            continue;
        }
        if (quoted || !((letter >= u'a' && letter <= u'z') || (letter >= u'A' && letter <= u'Z'))) continue;
        int64_t needed;
        switch (letter) {
        case u'G': case u'y': case u'Y': case u'u': case u'U': case u'r': case u'Q': case u'q':
        case u'M': case u'L': case u'l': case u'w': case u'W': case u'd': case u'D': case u'F':
        case u'g': case u'E': case u'e': case u'c':
            needed = day;
            break;
        case u'a': case u'h': case u'H': case u'k': case u'K':
            needed = hour;
            break;
        case u'm':
            needed = minute;
            break;
        case u's':
            needed = second;
            break;
        default:
            // Fractions (S, A), day periods (b, B: "noon" is one moment), zones (z, Z, O, v, V, X,
            // x) and anything else.
            return 1;
        }
        if (needed < unit) unit = needed;
    }
    return unit;
}

} // namespace

struct herald_number_formatter {
    explicit herald_number_formatter(const icu::number::LocalizedNumberFormatter &formatter)
        : formatter(formatter), id(next_formatter_id.fetch_add(1)) {}
    icu::number::LocalizedNumberFormatter formatter;
    const uint64_t id;
};

namespace {

/// An ISO 4217 code ICU accepts, as UTF-16; fills `error` and returns false otherwise.
bool currency_code(const char *currency, UnicodeString &code, herald_icu_error *error) {
    UErrorCode status = U_ZERO_ERROR;
    code = UnicodeString::fromUTF8(currency);
    icu::CurrencyUnit unit(code.getTerminatedBuffer(), status);
    if (U_FAILURE(status) || code.length() != 3) {
        set_error(error, std::string("unknown currency code '") + currency + "'");
        return false;
    }
    return true;
}

} // namespace

extern "C" herald_number_formatter *herald_number_formatter_open(const char *locale, const char *currency,
                                                                 const char *pattern, herald_icu_error *error) {
    UErrorCode status = U_ZERO_ERROR;
    icu::Locale resolved = make_locale(locale);
    if (pattern != nullptr) {
        // A custom pattern with the locale's symbols; converted to the thread-safe number formatter.
        icu::DecimalFormat format(UnicodeString::fromUTF8(pattern), new icu::DecimalFormatSymbols(resolved, status),
                                  status);
        if (U_FAILURE(status)) {
            set_error(error, std::string("invalid number pattern '") + pattern + "'");
            return nullptr;
        }
        if (currency != nullptr) {
            UnicodeString code;
            if (!currency_code(currency, code, error)) return nullptr;
            format.setCurrency(code.getTerminatedBuffer(), status);
        }
        const icu::number::LocalizedNumberFormatter *converted = format.toNumberFormatter(status);
        if (U_FAILURE(status) || converted == nullptr) {
            set_error(error, "number pattern", status);
            return nullptr;
        }
        return new herald_number_formatter(*converted);
    }
    auto formatter = icu::number::NumberFormatter::withLocale(resolved);
    if (currency != nullptr) {
        UnicodeString code;
        if (!currency_code(currency, code, error)) return nullptr;
        formatter = formatter.unit(icu::CurrencyUnit(code.getTerminatedBuffer(), status));
    }
    return new herald_number_formatter(formatter);
}

extern "C" void herald_number_formatter_close(herald_number_formatter *formatter) { delete formatter; }

extern "C" int32_t herald_number_format_decimal(const herald_number_formatter *formatter, const char *decimal,
                                                int32_t decimal_length, char *output, int32_t capacity,
                                                herald_icu_error *error) {
    // Kept between calls: the look-up compares without allocating once its capacity has grown.
    thread_local std::string input;
    input.assign(decimal, static_cast<size_t>(decimal_length));
    if (const std::string *known = recent_numbers.find(formatter->id, input)) {
        return copy_out(*known, output, capacity);
    }
    UErrorCode status = U_ZERO_ERROR;
    UnicodeString result =
        formatter->formatter.formatDecimal(icu::StringPiece(decimal, decimal_length), status).toString(status);
    if (U_FAILURE(status)) {
        set_error(error, "not a decimal number", status);
        return -1;
    }
    return copy_out(recent_numbers.remember(formatter->id, input, result), output, capacity);
}

struct herald_date_formatter {
    std::unique_ptr<icu::DateFormat> format;
    // DateFormat::format is const but uses a mutable Calendar inside.
    std::mutex lock;
    const uint64_t id = next_formatter_id.fetch_add(1);
    /// See pattern_unit; 1 when every moment is formatted on its own.
    int64_t unit = 1;
    /// The formatter's zone, for the offsets of the memo's keys: a copy of its own, read without
    /// the lock (offsets are looked up through const methods that change nothing).
    std::unique_ptr<icu::TimeZone> zone;

    DateKey key(double epoch_milliseconds) const {
        // Far beyond any calendar's reach (NaN too), a moment keys itself: no slot is computed from
        // a value that might not fit one. Herald's own moments are milliseconds in an Int64.
        if (unit == 1 || !(std::fabs(epoch_milliseconds) < 1e17)) return DateKey{epoch_milliseconds, 0, 0};
        int32_t raw = 0, daylight = 0;
        UErrorCode status = U_ZERO_ERROR;
        zone->getOffset(epoch_milliseconds, false, raw, daylight, status);
        if (U_FAILURE(status)) return DateKey{epoch_milliseconds, 0, 0};
        int32_t offset = raw + daylight;
        double local = epoch_milliseconds + offset;
        return DateKey{0, static_cast<int64_t>(std::floor(local / static_cast<double>(unit))), offset};
    }
};

extern "C" herald_date_formatter *herald_date_formatter_open(const char *locale, const char *time_zone,
                                                             const char *skeleton, herald_icu_error *error) {
    UErrorCode status = U_ZERO_ERROR;
    icu::Locale resolved = make_locale(locale);
    std::unique_ptr<icu::TimeZone> zone(icu::TimeZone::createTimeZone(UnicodeString::fromUTF8(time_zone)));
    UnicodeString zoneID;
    zone->getID(zoneID);
    if (zoneID == UNICODE_STRING_SIMPLE("Etc/Unknown")) {
        set_error(error, std::string("unknown time zone '") + time_zone + "'");
        return nullptr;
    }
    std::string style(skeleton);
    std::unique_ptr<icu::DateFormat> format;
    icu::DateFormat::EStyle dateStyle = icu::DateFormat::kNone;
    if (style == "short") dateStyle = icu::DateFormat::kShort;
    else if (style == "medium") dateStyle = icu::DateFormat::kMedium;
    else if (style == "long") dateStyle = icu::DateFormat::kLong;
    else if (style == "full") dateStyle = icu::DateFormat::kFull;
    if (dateStyle != icu::DateFormat::kNone) {
        format.reset(icu::DateFormat::createDateTimeInstance(dateStyle, icu::DateFormat::kShort, resolved));
    } else {
        format.reset(icu::DateFormat::createInstanceForSkeleton(UnicodeString::fromUTF8(skeleton), resolved, status));
    }
    if (U_FAILURE(status) || !format) {
        set_error(error, std::string("invalid date skeleton '") + skeleton + "'");
        return nullptr;
    }
    auto result = new herald_date_formatter();
    result->zone.reset(zone->clone());
    format->adoptTimeZone(zone.release());
    // Events' times are RFC 3339, whose dates are proleptic Gregorian; ICU's Gregorian calendar
    // (and those built on it) shows Julian dates before 15 October 1582 unless told otherwise.
    if (auto *gregorian = dynamic_cast<const icu::GregorianCalendar *>(format->getCalendar())) {
        std::unique_ptr<icu::GregorianCalendar> proleptic(gregorian->clone());
        UErrorCode changeStatus = U_ZERO_ERROR;
        proleptic->setGregorianChange(U_DATE_MIN, changeStatus);
        if (U_SUCCESS(changeStatus)) format->adoptCalendar(proleptic.release());
    }
    if (auto *simple = dynamic_cast<icu::SimpleDateFormat *>(format.get())) {
        UnicodeString pattern;
        simple->toPattern(pattern);
        result->unit = pattern_unit(pattern);
    }
    result->format = std::move(format);
    return result;
}

extern "C" void herald_date_formatter_close(herald_date_formatter *formatter) { delete formatter; }

extern "C" int32_t herald_date_format(herald_date_formatter *formatter, double epoch_milliseconds, char *output,
                                      int32_t capacity, herald_icu_error *error) {
    (void)error;
    DateKey key = formatter->key(epoch_milliseconds);
    if (const std::string *known = recent_dates.find(formatter->id, key)) {
        return copy_out(*known, output, capacity);
    }
    UnicodeString result;
    {
        std::lock_guard<std::mutex> guard(formatter->lock);
        formatter->format->format(static_cast<UDate>(epoch_milliseconds), result);
    }
    return copy_out(recent_dates.remember(formatter->id, key, result), output, capacity);
}

extern "C" void herald_icu_versions(char *icu, char *cldr, int32_t capacity) {
    char text[U_MAX_VERSION_STRING_LENGTH];
    UVersionInfo version;
    u_getVersion(version);
    u_versionToString(version, text);
    std::snprintf(icu, static_cast<size_t>(capacity), "%s", text);
    UErrorCode status = U_ZERO_ERROR;
    ulocdata_getCLDRVersion(version, &status);
    if (U_SUCCESS(status)) {
        u_versionToString(version, text);
    } else {
        std::snprintf(text, sizeof(text), "unknown");
    }
    std::snprintf(cldr, static_cast<size_t>(capacity), "%s", text);
}
