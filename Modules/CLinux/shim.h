#ifndef PPC_CLINUX_SHIM_H
#define PPC_CLINUX_SHIM_H
/* glibc's Linux-only calls that Swift's Glibc module does not export. Part of libc: no pkg-config, no link line.
   Imported only by the Syscall module. (No _GNU_SOURCE: it would redefine types the Glibc module already has.) */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <string.h>
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

/* SIGINT and SIGTERM as bytes on a pipe (the self-pipe pattern): the handler runs on whichever thread the kernel picks,
   does one write(2) (async-signal-safe) and keeps errno. Only Syscall's Signals.swift calls these, so the one static
   descriptor below is the process's. */
static int ppc_stop_signal_fd = -1;
static void ppc_stop_signal_handler(int signo) {
    int saved = errno;
    unsigned char byte = (unsigned char)signo;
    if (ppc_stop_signal_fd >= 0) { ssize_t ignored = write(ppc_stop_signal_fd, &byte, 1); (void)ignored; }
    errno = saved;
}
/* fd >= 0: SIGINT and SIGTERM each write their number to fd (non-blocking: a full pipe drops the byte, never blocks the
   thread). fd < 0: both get their default action back. 0, or -1 with errno. */
static inline int ppc_route_stop_signals(int fd) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (fd >= 0) {
        ppc_stop_signal_fd = fd;
        action.sa_handler = ppc_stop_signal_handler;
    } else {
        action.sa_handler = SIG_DFL;
    }
    if (sigaction(SIGINT, &action, 0) != 0 || sigaction(SIGTERM, &action, 0) != 0) return -1;
    return 0;
}
#endif
