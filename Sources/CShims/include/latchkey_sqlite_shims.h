// SQLite helpers for what Swift cannot import. Standalone, and on purpose free of
// <sqlite3.h>: the statement is an opaque forward declaration (Swift sees OpaquePointer, as
// it does for CSQLite's sqlite3_stmt*), so importing CShims does not bring SQLite's API into
// other modules (docs/architecture.md: only CredentialStore imports SQLite).
#ifndef LATCHKEY_SQLITE_SHIMS_H
#define LATCHKEY_SQLITE_SHIMS_H

#ifdef __cplusplus
extern "C" {
#endif

struct sqlite3_stmt;

/// sqlite3_bind_blob with SQLITE_TRANSIENT (SQLite copies the bytes before returning).
/// Why a shim: SQLITE_TRANSIENT is the macro `((sqlite3_destructor_type)-1)`, a cast of an
/// integer to a function pointer, which Swift cannot import.
int lk_sqlite3_bind_blob_transient(struct sqlite3_stmt *statement, int index,
                                   const void *bytes, int count);

/// sqlite3_bind_text with SQLITE_TRANSIENT; `count` is the UTF-8 byte count.
/// Why a shim: as above, SQLITE_TRANSIENT is not importable.
int lk_sqlite3_bind_text_transient(struct sqlite3_stmt *statement, int index,
                                   const char *utf8, int count);

#ifdef __cplusplus
}
#endif

#endif
