#ifndef PPC_CLINUX_SHIM_H
#define PPC_CLINUX_SHIM_H
/* glibc's Linux-only calls that Swift's Glibc module does not export. Part of libc: no pkg-config, no link line.
   Imported only by the Syscall module. (No _GNU_SOURCE: it would redefine types the Glibc module already has.) */
#include <malloc.h>
#include <unistd.h>
#include <sys/syscall.h>

static inline int ppc_gettid(void) { return (int)syscall(SYS_gettid); }
#endif
