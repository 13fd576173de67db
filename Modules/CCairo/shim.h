#ifndef PPC_CCAIRO_SHIM_H
#define PPC_CCAIRO_SHIM_H
/* cairo 1.16 (Debian 12): 2D drawing into image surfaces. Imported only by the Raster module. */
#include <cairo.h>
#endif
