#ifndef PPC_CPOSTGRES_SHIM_H
#define PPC_CPOSTGRES_SHIM_H
#include <libpq-fe.h>
#endif
