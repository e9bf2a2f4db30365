#ifndef HERALD_ICU_H
#define HERALD_ICU_H

// A small C API over the system ICU (libicu-dev) for what Herald's catalog needs: ICU MessageFormat
// with named arguments, argument inspection for type checks, plural categories, and locale-aware
// number, currency and date formatting. Strings are UTF-8. Every object is immutable after it is
// opened and may be used from any thread (date formatting takes an internal lock: ICU calendars are
// not thread-safe).

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Where a call failed: a message, and for patterns the 0-based offset into the pattern.
typedef struct herald_icu_error {
    char message[256];
    int32_t offset;
} herald_icu_error;

// MARK: MessageFormat

typedef struct herald_message herald_message;

/// How an argument is used by a message.
typedef enum herald_argument_kind {
    HERALD_ARGUMENT_SIMPLE = 0,        // {name}
    HERALD_ARGUMENT_NUMBER = 1,        // {name, number[, style]}
    HERALD_ARGUMENT_DATE = 2,          // {name, date[, style]}
    HERALD_ARGUMENT_TIME = 3,          // {name, time[, style]}
    HERALD_ARGUMENT_PLURAL = 4,        // {name, plural, ...}
    HERALD_ARGUMENT_SELECT = 5,        // {name, select, ...}
    HERALD_ARGUMENT_SELECTORDINAL = 6, // {name, selectordinal, ...}
    HERALD_ARGUMENT_OTHER = 7,         // choice, spellout, duration, ordinal, ...
} herald_argument_kind;

/// Parses a MessageFormat pattern for a locale. Returns NULL and fills `error` if it is invalid
/// (including numbered arguments: Herald's messages use names).
herald_message *herald_message_open(const char *locale, const char *pattern, int32_t pattern_length,
                                    herald_icu_error *error);
void herald_message_close(herald_message *message);

/// The number of argument uses in the message (an argument used twice appears twice).
int32_t herald_message_argument_count(const herald_message *message);
/// One argument use: its name (NUL-terminated, truncated to `name_capacity`) and kind, for a
/// `select` the keywords of its cases (comma-separated, in `keywords`), and whether the use sits
/// inside a case other than `absent` of a `select` on the same argument (`guarded`), which is how a
/// message shows an optional field only when it is present.
void herald_message_argument(const herald_message *message, int32_t index, char *name, int32_t name_capacity,
                             herald_argument_kind *kind, char *keywords, int32_t keywords_capacity,
                             int32_t *guarded);

/// A value for one named argument.
typedef enum herald_value_kind {
    HERALD_VALUE_STRING = 0,
    HERALD_VALUE_DOUBLE = 1,
    HERALD_VALUE_INT64 = 2,
    HERALD_VALUE_DECIMAL = 3, // `string` holds a decimal number, e.g. "1234.50"
} herald_value_kind;

typedef struct herald_argument {
    const char *name;
    herald_value_kind kind;
    const char *string;
    int32_t string_length;
    double number;
    int64_t integer;
} herald_argument;

/// Formats the message. Writes UTF-8 into `output` (NUL-terminated when it fits) and returns the
/// length needed, or -1 with `error` filled.
int32_t herald_message_format(const herald_message *message, const herald_argument *arguments, int32_t count,
                              char *output, int32_t capacity, herald_icu_error *error);

// MARK: Plural rules

/// The plural category (zero, one, two, few, many, other) of `number` in `locale`, cardinal or
/// ordinal. Returns 0 on success.
int32_t herald_plural_category(const char *locale, double number, int32_t ordinal, char *category, int32_t capacity);

// MARK: Numbers, money, dates

typedef struct herald_number_formatter herald_number_formatter;

/// A formatter for plain numbers (`currency` NULL) or for money in an ISO 4217 currency. `pattern`
/// (may be NULL) overrides the locale's pattern with an ICU decimal pattern such as "#,##0.00 ¤",
/// keeping the locale's symbols and separators.
herald_number_formatter *herald_number_formatter_open(const char *locale, const char *currency, const char *pattern,
                                                      herald_icu_error *error);
void herald_number_formatter_close(herald_number_formatter *formatter);
/// Formats a decimal string (exact: "1234.50"). Returns the length needed, or -1 with `error`.
/// Thread-safe. Each thread remembers the last few values it formatted and their text, so a value
/// formatted again soon is copied, not formatted.
int32_t herald_number_format_decimal(const herald_number_formatter *formatter, const char *decimal,
                                     int32_t decimal_length, char *output, int32_t capacity, herald_icu_error *error);

typedef struct herald_date_formatter herald_date_formatter;

/// A date formatter for a locale, an IANA time zone and a skeleton (e.g. "yMMMdjmm") or a style
/// ("short", "medium", "long", "full").
herald_date_formatter *herald_date_formatter_open(const char *locale, const char *time_zone, const char *skeleton,
                                                  herald_icu_error *error);
void herald_date_formatter_close(herald_date_formatter *formatter);
/// Formats a moment given in milliseconds since the Unix epoch. Returns the length needed, or -1.
/// Thread-safe; remembers recent moments and their text as the number formatter does.
int32_t herald_date_format(herald_date_formatter *formatter, double epoch_milliseconds, char *output,
                           int32_t capacity, herald_icu_error *error);

// MARK: Versions

/// The ICU library's version ("72.1") and the version of the CLDR data it carries ("42.0"), each
/// written NUL-terminated into a buffer of `capacity` bytes (U_MAX_VERSION_STRING_LENGTH, 20, is
/// enough): formats and plural rules follow that data, so a bug report needs both.
void herald_icu_versions(char *icu, char *cldr, int32_t capacity);

#ifdef __cplusplus
}
#endif

#endif
