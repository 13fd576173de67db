#ifndef PPC_CFFMPEG_SHIM_H
#define PPC_CFFMPEG_SHIM_H
/* FFmpeg 5.1 (Debian 12): libavcodec, libavformat, libavfilter, libavutil, libswscale. Imported only by the Media module. */
#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/dict.h>
#include <libswscale/swscale.h>
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersrc.h>
#include <libavfilter/buffersink.h>

/* Function-like macros do not import into Swift; these do. */
static inline int ppc_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int ppc_averror_eof(void) { return AVERROR_EOF; }
static inline int ppc_averror(int e) { return AVERROR(e); }
static inline int64_t ppc_av_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline AVRational ppc_rational(int num, int den) { AVRational r = { num, den }; return r; }
#endif
