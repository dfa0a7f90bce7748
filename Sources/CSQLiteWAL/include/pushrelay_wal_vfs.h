#ifndef PUSHRELAY_WAL_VFS_H
#define PUSHRELAY_WAL_VFS_H

/*
 * A VFS for the store's SQLite connections that writes each commit's WAL frames with one write.
 *
 * SQLite writes every WAL frame as two writes (its 24-byte header, then the page), so a commit of five pages costs
 * ten pwrite calls. This VFS wraps the default one and, for WAL files only, collects contiguous writes in a buffer
 * that goes to the file in one write before anything that needs the bytes there: a sync (every commit syncs the WAL
 * with synchronous=FULL), a read, a truncate, a size query, a file control, a memory map, a close. What SQLite has
 * synced is therefore exactly what it would have synced without the buffer; what is lost in a crash before the sync
 * was never committed. Database and journal files pass through untouched.
 */

#include <stdint.h>

/* The VFS's name, for sqlite3_open_v2's zVfs. */
#define PUSHRELAY_WAL_VFS_NAME "pushrelay-wal"

/* Registers the VFS (not as the default) once; later calls return the first result. SQLITE_OK or an error code. */
int pushrelay_wal_vfs_register(void);

/* Configures the SQLite library for the process once, before it initializes (later calls return the first result):
 * no memory statistics (SQLITE_CONFIG_MEMSTATUS 0). With them, every sqlite3_malloc and sqlite3_free took a global
 * mutex, shared by the writer, the readers and the checkpointer (about 14 lock pairs per committed send), for figures
 * nothing reads. SQLITE_OK, or SQLITE_MISUSE when the library had initialized before the first call.
 * pushrelay_wal_vfs_register() calls it first. */
int pushrelay_sqlite_configure(void);

struct sqlite3;
/* For tests and diagnostics: the writes SQLite asked for on the WAL file of one connection's main database (open
 * through this VFS, in WAL mode), and the writes that reached the file; SQLITE_NOTFOUND when it has none. */
int pushrelay_wal_vfs_counters(struct sqlite3 *db, uint64_t *requested, uint64_t *written);

#endif
