#ifndef PPC_CCIVETWEB_SHIM_H
#define PPC_CCIVETWEB_SHIM_H
#include <stddef.h>
#include <civetweb.h>
#endif
