#ifndef PUSHRELAY_CSQLITE_SHIM_H
#define PUSHRELAY_CSQLITE_SHIM_H
#include <sqlite3.h>
/* SQLITE_TRANSIENT is a function-pointer cast macro that Swift does not import. */
static inline sqlite3_destructor_type pushrelay_sqlite_transient(void) { return SQLITE_TRANSIENT; }
#endif
