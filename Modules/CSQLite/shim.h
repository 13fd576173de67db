#ifndef PPC_CSQLITE_SHIM_H
#define PPC_CSQLITE_SHIM_H
#include <sqlite3.h>
/* SQLITE_TRANSIENT is a cast macro Swift does not import: SQLite copies the bound value before the call returns. */
static inline sqlite3_destructor_type ppc_sqlite_transient(void) { return SQLITE_TRANSIENT; }
#endif
