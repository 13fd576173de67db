#ifndef PPC_CXXHASH_SHIM_H
#define PPC_CXXHASH_SHIM_H
#include <xxhash.h>
#endif
