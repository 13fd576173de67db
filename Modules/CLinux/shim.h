#ifndef PPC_CLINUX_SHIM_H
#define PPC_CLINUX_SHIM_H
/* glibc's Linux-only calls that Swift's Glibc module does not export. Part of libc: no pkg-config, no link line.
   Imported only by the Syscall module. (No _GNU_SOURCE: it would redefine types the Glibc module already has.) */
#include <malloc.h>
#include <unistd.h>
#include <sys/syscall.h>

static inline int ppc_gettid(void) { return (int)syscall(SYS_gettid); }
/* A thread's CPU mask (tid 0: the calling thread), as the raw syscalls take it (a bitmask in unsigned longs): returns
   the bytes the kernel wrote (get) or 0 (set, the calling thread), -1 with errno on failure. */
static inline long ppc_getaffinity(int tid, unsigned long *mask, unsigned long bytes) { return syscall(SYS_sched_getaffinity, tid, bytes, mask); }
static inline long ppc_setaffinity(const unsigned long *mask, unsigned long bytes) { return syscall(SYS_sched_setaffinity, 0, bytes, mask); }
/* Moves the calling thread into the namespace `fd` names (nstype 0: whatever it is); 0 or -1 with errno. */
static inline long ppc_setns(int fd, int nstype) { return syscall(SYS_setns, fd, nstype); }
/* Starts (flags 2: SYNC_FILE_RANGE_WRITE) writeback of a file's range without waiting for it; 0 or -1 with errno. */
static inline long ppc_sync_file_range(int fd, long long offset, long long bytes, unsigned int flags) { return syscall(SYS_sync_file_range, fd, offset, bytes, flags); }
#endif
