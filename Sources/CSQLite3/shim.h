#ifndef HOTPATCH_CSQLITE3_SHIM_H
#define HOTPATCH_CSQLITE3_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro Swift cannot import: SQLite copies the bytes before
// the call returns, so the Swift buffer only has to live for the call.
static inline int hp_sqlite3_bind_text(sqlite3_stmt *s, int i, const char *p, int n) {
    return sqlite3_bind_text(s, i, p, n, SQLITE_TRANSIENT);
}
static inline int hp_sqlite3_bind_blob(sqlite3_stmt *s, int i, const void *p, int n) {
    return sqlite3_bind_blob(s, i, p, n, SQLITE_TRANSIENT);
}
#endif
