#ifndef PPC_CSODIUM_SHIM_H
#define PPC_CSODIUM_SHIM_H
#include <sodium.h>
#endif
