#ifndef PPC_CZSTD_SHIM_H
#define PPC_CZSTD_SHIM_H
#include <zstd.h>
#endif
