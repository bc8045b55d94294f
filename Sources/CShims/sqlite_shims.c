// SQLite shims for the CredentialStore module; see include/latchkey_sqlite_shims.h.
#include <sqlite3.h>

#include "latchkey_sqlite_shims.h"

int lk_sqlite3_bind_blob_transient(sqlite3_stmt *statement, int index,
                                   const void *bytes, int count) {
    // SQLITE_TRANSIENT: a macro casting -1 to a destructor pointer; Swift cannot import it.
    return sqlite3_bind_blob(statement, index, bytes, count, SQLITE_TRANSIENT);
}

int lk_sqlite3_bind_text_transient(sqlite3_stmt *statement, int index,
                                   const char *utf8, int count) {
    // SQLITE_TRANSIENT: see above.
    return sqlite3_bind_text(statement, index, utf8, count, SQLITE_TRANSIENT);
}
