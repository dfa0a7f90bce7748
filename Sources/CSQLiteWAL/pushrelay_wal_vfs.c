#include "pushrelay_wal_vfs.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* The largest run of WAL bytes held before it is written; a longer commit writes one run per this many bytes. The
 * unix VFS writes at most 0x1ffff bytes per call (it masks the length: a 256 KiB write writes nothing and reports
 * SQLITE_FULL), so a run stays well below that. */
#define BUFFER_CAPACITY (64 * 1024)

typedef struct WalBufferedFile {
    sqlite3_file base;      /* pMethods: this VFS's methods */
    sqlite3_file *real;     /* the wrapped VFS's file, allocated right after this struct */
    unsigned char *buffer;  /* WAL files only, allocated on the first write */
    sqlite3_int64 offset;   /* where buffer[0] goes in the file */
    int length;             /* bytes held; 0: nothing */
    int isWAL;
    uint64_t requestedWrites;  /* writes SQLite asked for, and writes that reached the file */
    uint64_t fileWrites;
} WalBufferedFile;

static sqlite3_vfs *realVFS;
static sqlite3_vfs walVFS;
static int registration = SQLITE_ERROR;
static pthread_once_t registerOnce = PTHREAD_ONCE_INIT;

static sqlite3_file *real(sqlite3_file *file) { return ((WalBufferedFile *)file)->real; }

/* Writes what is held. The bytes are dropped even when the write fails: SQLite reports the error and rolls the
 * transaction back, and its next frames go where these were. */
static int flush(WalBufferedFile *p) {
    if (p->length == 0) return SQLITE_OK;
    int rc = p->real->pMethods->xWrite(p->real, p->buffer, p->length, p->offset);
    p->fileWrites += 1;
    p->length = 0;
    return rc;
}

static int xClose(sqlite3_file *file) {
    WalBufferedFile *p = (WalBufferedFile *)file;
    int flushed = flush(p);
    int rc = p->real->pMethods->xClose(p->real);
    free(p->buffer);
    p->buffer = NULL;
    return flushed != SQLITE_OK ? flushed : rc;
}

static int xRead(sqlite3_file *file, void *data, int amount, sqlite3_int64 offset) {
    int rc = flush((WalBufferedFile *)file);
    if (rc != SQLITE_OK) return rc;
    return real(file)->pMethods->xRead(real(file), data, amount, offset);
}

static int xWrite(sqlite3_file *file, const void *data, int amount, sqlite3_int64 offset) {
    WalBufferedFile *p = (WalBufferedFile *)file;
    if (!p->isWAL) return p->real->pMethods->xWrite(p->real, data, amount, offset);
    p->requestedWrites += 1;
    if (p->length > 0) {
        sqlite3_int64 end = p->offset + p->length;
        if (offset == end && p->length + amount <= BUFFER_CAPACITY) {
            memcpy(p->buffer + p->length, data, (size_t)amount);  /* the next bytes: appended */
            p->length += amount;
            return SQLITE_OK;
        }
        if (offset >= p->offset && offset + amount <= end) {
            memcpy(p->buffer + (offset - p->offset), data, (size_t)amount);  /* inside what is held: rewritten */
            return SQLITE_OK;
        }
        int rc = flush(p);  /* anywhere else: what is held goes first, in order */
        if (rc != SQLITE_OK) return rc;
    }
    if (amount > BUFFER_CAPACITY) {
        p->fileWrites += 1;
        return p->real->pMethods->xWrite(p->real, data, amount, offset);
    }
    if (p->buffer == NULL) {
        p->buffer = malloc(BUFFER_CAPACITY);
        if (p->buffer == NULL) return SQLITE_IOERR_NOMEM;
    }
    memcpy(p->buffer, data, (size_t)amount);
    p->offset = offset;
    p->length = amount;
    return SQLITE_OK;
}

static int xTruncate(sqlite3_file *file, sqlite3_int64 size) {
    int rc = flush((WalBufferedFile *)file);
    if (rc != SQLITE_OK) return rc;
    return real(file)->pMethods->xTruncate(real(file), size);
}

static int xSync(sqlite3_file *file, int flags) {
    int rc = flush((WalBufferedFile *)file);
    if (rc != SQLITE_OK) return rc;
    return real(file)->pMethods->xSync(real(file), flags);
}

static int xFileSize(sqlite3_file *file, sqlite3_int64 *size) {
    int rc = flush((WalBufferedFile *)file);
    if (rc != SQLITE_OK) return rc;
    return real(file)->pMethods->xFileSize(real(file), size);
}

static int xLock(sqlite3_file *file, int level) { return real(file)->pMethods->xLock(real(file), level); }
static int xUnlock(sqlite3_file *file, int level) { return real(file)->pMethods->xUnlock(real(file), level); }
static int xCheckReservedLock(sqlite3_file *file, int *out) {
    return real(file)->pMethods->xCheckReservedLock(real(file), out);
}

static int xFileControl(sqlite3_file *file, int op, void *arg) {
    int rc = flush((WalBufferedFile *)file);
    if (rc != SQLITE_OK) return rc;
    return real(file)->pMethods->xFileControl(real(file), op, arg);
}

static int xSectorSize(sqlite3_file *file) { return real(file)->pMethods->xSectorSize(real(file)); }
static int xDeviceCharacteristics(sqlite3_file *file) {
    return real(file)->pMethods->xDeviceCharacteristics(real(file));
}

static int xShmMap(sqlite3_file *file, int page, int pageSize, int extend, void volatile **out) {
    const sqlite3_io_methods *m = real(file)->pMethods;
    if (m->iVersion < 2 || m->xShmMap == NULL) return SQLITE_IOERR_SHMMAP;
    return m->xShmMap(real(file), page, pageSize, extend, out);
}

static int xShmLock(sqlite3_file *file, int offset, int n, int flags) {
    const sqlite3_io_methods *m = real(file)->pMethods;
    if (m->iVersion < 2 || m->xShmLock == NULL) return SQLITE_IOERR_SHMLOCK;
    return m->xShmLock(real(file), offset, n, flags);
}

static void xShmBarrier(sqlite3_file *file) {
    const sqlite3_io_methods *m = real(file)->pMethods;
    if (m->iVersion >= 2 && m->xShmBarrier != NULL) m->xShmBarrier(real(file));
}

static int xShmUnmap(sqlite3_file *file, int deleteFlag) {
    const sqlite3_io_methods *m = real(file)->pMethods;
    if (m->iVersion < 2 || m->xShmUnmap == NULL) return SQLITE_OK;
    return m->xShmUnmap(real(file), deleteFlag);
}

static int xFetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **out) {
    const sqlite3_io_methods *m = real(file)->pMethods;
    *out = NULL;
    int rc = flush((WalBufferedFile *)file);
    if (rc != SQLITE_OK) return rc;
    if (m->iVersion < 3 || m->xFetch == NULL) return SQLITE_OK;  /* no map: SQLite reads instead */
    return m->xFetch(real(file), offset, amount, out);
}

static int xUnfetch(sqlite3_file *file, sqlite3_int64 offset, void *pointer) {
    const sqlite3_io_methods *m = real(file)->pMethods;
    if (m->iVersion < 3 || m->xUnfetch == NULL) return SQLITE_OK;
    return m->xUnfetch(real(file), offset, pointer);
}

static const sqlite3_io_methods walMethods = {
    3, xClose, xRead, xWrite, xTruncate, xSync, xFileSize, xLock, xUnlock, xCheckReservedLock, xFileControl,
    xSectorSize, xDeviceCharacteristics, xShmMap, xShmLock, xShmBarrier, xShmUnmap, xFetch, xUnfetch,
};

static int vfsOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *outFlags) {
    (void)vfs;
    WalBufferedFile *p = (WalBufferedFile *)file;
    memset(p, 0, sizeof(*p));
    p->real = (sqlite3_file *)&p[1];
    int rc = realVFS->xOpen(realVFS, name, p->real, flags, outFlags);
    if (rc != SQLITE_OK) {
        if (p->real->pMethods != NULL) p->real->pMethods->xClose(p->real);
        p->base.pMethods = NULL;
        return rc;
    }
    p->isWAL = (flags & SQLITE_OPEN_WAL) != 0;
    p->base.pMethods = &walMethods;
    return SQLITE_OK;
}

/* Everything else is the wrapped VFS's. */
static int vfsDelete(sqlite3_vfs *vfs, const char *name, int syncDir) {
    (void)vfs;
    return realVFS->xDelete(realVFS, name, syncDir);
}
static int vfsAccess(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    (void)vfs;
    return realVFS->xAccess(realVFS, name, flags, out);
}
static int vfsFullPathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    (void)vfs;
    return realVFS->xFullPathname(realVFS, name, size, out);
}
static void *vfsDlOpen(sqlite3_vfs *vfs, const char *name) {
    (void)vfs;
    return realVFS->xDlOpen(realVFS, name);
}
static void vfsDlError(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    realVFS->xDlError(realVFS, size, out);
}
static void (*vfsDlSym(sqlite3_vfs *vfs, void *handle, const char *symbol))(void) {
    (void)vfs;
    return realVFS->xDlSym(realVFS, handle, symbol);
}
static void vfsDlClose(sqlite3_vfs *vfs, void *handle) {
    (void)vfs;
    realVFS->xDlClose(realVFS, handle);
}
static int vfsRandomness(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return realVFS->xRandomness(realVFS, size, out);
}
static int vfsSleep(sqlite3_vfs *vfs, int micros) {
    (void)vfs;
    return realVFS->xSleep(realVFS, micros);
}
static int vfsCurrentTime(sqlite3_vfs *vfs, double *out) {
    (void)vfs;
    return realVFS->xCurrentTime(realVFS, out);
}
static int vfsGetLastError(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return realVFS->xGetLastError ? realVFS->xGetLastError(realVFS, size, out) : 0;
}
static int vfsCurrentTimeInt64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    (void)vfs;
    return realVFS->xCurrentTimeInt64(realVFS, out);
}

static pthread_once_t configureOnce = PTHREAD_ONCE_INIT;
static int configuration = SQLITE_MISUSE;

static void configureLibrary(void) {
    configuration = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int pushrelay_sqlite_configure(void) {
    pthread_once(&configureOnce, configureLibrary);
    return configuration;
}

static void registerVFS(void) {
    pushrelay_sqlite_configure();  /* before sqlite3_vfs_find, which initializes the library */
    realVFS = sqlite3_vfs_find(NULL);
    if (realVFS == NULL || realVFS->iVersion < 2 || realVFS->xCurrentTimeInt64 == NULL) {
        registration = SQLITE_ERROR;
        return;
    }
    memset(&walVFS, 0, sizeof(walVFS));
    walVFS.iVersion = 2;
    walVFS.szOsFile = (int)sizeof(WalBufferedFile) + realVFS->szOsFile;
    walVFS.mxPathname = realVFS->mxPathname;
    walVFS.zName = PUSHRELAY_WAL_VFS_NAME;
    walVFS.xOpen = vfsOpen;
    walVFS.xDelete = vfsDelete;
    walVFS.xAccess = vfsAccess;
    walVFS.xFullPathname = vfsFullPathname;
    walVFS.xDlOpen = vfsDlOpen;
    walVFS.xDlError = vfsDlError;
    walVFS.xDlSym = vfsDlSym;
    walVFS.xDlClose = vfsDlClose;
    walVFS.xRandomness = vfsRandomness;
    walVFS.xSleep = vfsSleep;
    walVFS.xCurrentTime = vfsCurrentTime;
    walVFS.xGetLastError = vfsGetLastError;
    walVFS.xCurrentTimeInt64 = vfsCurrentTimeInt64;
    registration = sqlite3_vfs_register(&walVFS, 0);
}

int pushrelay_wal_vfs_register(void) {
    pthread_once(&registerOnce, registerVFS);
    return registration;
}

int pushrelay_wal_vfs_counters(sqlite3 *db, uint64_t *requested, uint64_t *written) {
    sqlite3_file *file = NULL;
    int rc = sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file);
    if (rc != SQLITE_OK || file == NULL || file->pMethods != &walMethods) return SQLITE_NOTFOUND;
    WalBufferedFile *p = (WalBufferedFile *)file;
    if (!p->isWAL) return SQLITE_NOTFOUND;
    *requested = p->requestedWrites;
    *written = p->fileWrites;
    return SQLITE_OK;
}
