#ifndef HERALD_CSQLITE_SHIM_H
#define HERALD_CSQLITE_SHIM_H

// The system SQLite (Debian: libsqlite3-dev). Only HeraldStore/SQLite/ imports this module.
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import: bound
// text is copied by SQLite, so the Swift string may go away after the bind.
static inline sqlite3_destructor_type herald_sqlite_transient(void) { return SQLITE_TRANSIENT; }

// sqlite3_config is variadic, which Swift cannot call. Turns off SQLite's allocation statistics,
// whose global mutex every allocation would otherwise take; must run before the first connection
// opens (sqlite3_config fails harmlessly with SQLITE_MISUSE afterwards).
static inline int herald_sqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

#endif
