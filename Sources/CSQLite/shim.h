#ifndef HERALD_CSQLITE_SHIM_H
#define HERALD_CSQLITE_SHIM_H

// The system SQLite (Debian: libsqlite3-dev). Only HeraldStore/SQLite/ imports this module.
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import: bound
// text is copied by SQLite, so the Swift string may go away after the bind.
static inline sqlite3_destructor_type herald_sqlite_transient(void) { return SQLITE_TRANSIENT; }

#endif
