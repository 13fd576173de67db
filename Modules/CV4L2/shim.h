#ifndef PPC_CV4L2_SHIM_H
#define PPC_CV4L2_SHIM_H
/* The V4L2 user API (linux/videodev2.h, from Debian's linux-libc-dev) as Swift can call it: the VIDIOC_* request
   numbers are function-like macros Swift cannot import, so they are re-exported as constants, and ioctl(2) is variadic,
   so it is re-exported with a fixed signature. Imported only by the V4L2 module.

   The struct layouts ppc relies on are checked here, at build time: if a kernel header ever changed one, the build
   stops instead of a capture reading the wrong bytes. The figures are the x86_64 and aarch64 (LP64) ABI. */
#include <linux/videodev2.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <poll.h>

#if defined(__LP64__)
_Static_assert(sizeof(struct v4l2_capability) == 104, "v4l2_capability layout");
_Static_assert(sizeof(struct v4l2_fmtdesc) == 64, "v4l2_fmtdesc layout");
_Static_assert(sizeof(struct v4l2_frmsizeenum) == 44, "v4l2_frmsizeenum layout");
_Static_assert(sizeof(struct v4l2_frmivalenum) == 52, "v4l2_frmivalenum layout");
_Static_assert(sizeof(struct v4l2_format) == 208, "v4l2_format layout");
_Static_assert(offsetof(struct v4l2_format, fmt) == 8, "v4l2_format.fmt offset");
_Static_assert(sizeof(struct v4l2_streamparm) == 204, "v4l2_streamparm layout");
_Static_assert(sizeof(struct v4l2_requestbuffers) == 20, "v4l2_requestbuffers layout");
_Static_assert(sizeof(struct v4l2_buffer) == 88, "v4l2_buffer layout");
_Static_assert(offsetof(struct v4l2_buffer, timestamp) == 24, "v4l2_buffer.timestamp offset");
_Static_assert(offsetof(struct v4l2_buffer, sequence) == 56, "v4l2_buffer.sequence offset");
_Static_assert(offsetof(struct v4l2_buffer, m) == 64, "v4l2_buffer.m offset");
_Static_assert(sizeof(struct v4l2_input) == 80, "v4l2_input layout");
_Static_assert(sizeof(struct v4l2_queryctrl) == 68, "v4l2_queryctrl layout");
_Static_assert(sizeof(struct v4l2_control) == 8, "v4l2_control layout");
#endif

static const unsigned long PPC_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
static const unsigned long PPC_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
static const unsigned long PPC_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
static const unsigned long PPC_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;
static const unsigned long PPC_VIDIOC_ENUMINPUT = VIDIOC_ENUMINPUT;
static const unsigned long PPC_VIDIOC_G_INPUT = VIDIOC_G_INPUT;
static const unsigned long PPC_VIDIOC_S_INPUT = VIDIOC_S_INPUT;
static const unsigned long PPC_VIDIOC_G_FMT = VIDIOC_G_FMT;
static const unsigned long PPC_VIDIOC_S_FMT = VIDIOC_S_FMT;
static const unsigned long PPC_VIDIOC_TRY_FMT = VIDIOC_TRY_FMT;
static const unsigned long PPC_VIDIOC_G_PARM = VIDIOC_G_PARM;
static const unsigned long PPC_VIDIOC_S_PARM = VIDIOC_S_PARM;
static const unsigned long PPC_VIDIOC_QUERYCTRL = VIDIOC_QUERYCTRL;
static const unsigned long PPC_VIDIOC_G_CTRL = VIDIOC_G_CTRL;
static const unsigned long PPC_VIDIOC_S_CTRL = VIDIOC_S_CTRL;
static const unsigned long PPC_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
static const unsigned long PPC_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
static const unsigned long PPC_VIDIOC_QBUF = VIDIOC_QBUF;
static const unsigned long PPC_VIDIOC_DQBUF = VIDIOC_DQBUF;
static const unsigned long PPC_VIDIOC_STREAMON = VIDIOC_STREAMON;
static const unsigned long PPC_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;

/* The flag bits and ids ppc reads (macros with casts or expressions, which Swift may not import). */
static const unsigned int PPC_V4L2_BUF_FLAG_TIMESTAMP_MASK = V4L2_BUF_FLAG_TIMESTAMP_MASK;
static const unsigned int PPC_V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC = V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC;
static const unsigned int PPC_V4L2_BUF_FLAG_TIMESTAMP_COPY = V4L2_BUF_FLAG_TIMESTAMP_COPY;
static const unsigned int PPC_V4L2_BUF_FLAG_TSTAMP_SRC_MASK = V4L2_BUF_FLAG_TSTAMP_SRC_MASK;
static const unsigned int PPC_V4L2_BUF_FLAG_TSTAMP_SRC_SOE = V4L2_BUF_FLAG_TSTAMP_SRC_SOE;
static const unsigned int PPC_V4L2_BUF_FLAG_ERROR = V4L2_BUF_FLAG_ERROR;
static const unsigned int PPC_V4L2_CTRL_FLAG_NEXT_CTRL = V4L2_CTRL_FLAG_NEXT_CTRL;
static const unsigned int PPC_V4L2_PIX_FMT_NV12 = V4L2_PIX_FMT_NV12;
static const unsigned int PPC_V4L2_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV;
static const unsigned int PPC_V4L2_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG;
static const unsigned int PPC_V4L2_PIX_FMT_JPEG = V4L2_PIX_FMT_JPEG;
static const unsigned int PPC_V4L2_PIX_FMT_H264 = V4L2_PIX_FMT_H264;
static const unsigned int PPC_V4L2_CID_EXPOSURE_AUTO = V4L2_CID_EXPOSURE_AUTO;
static const unsigned int PPC_V4L2_CID_EXPOSURE_AUTO_PRIORITY = V4L2_CID_EXPOSURE_AUTO_PRIORITY;
static const unsigned int PPC_V4L2_CID_FOCUS_AUTO = V4L2_CID_FOCUS_AUTO;
static const unsigned int PPC_V4L2_CID_AUTO_WHITE_BALANCE = V4L2_CID_AUTO_WHITE_BALANCE;
static const unsigned int PPC_V4L2_CID_AUTOGAIN = V4L2_CID_AUTOGAIN;
static const unsigned int PPC_V4L2_CID_IMAGE_STABILIZATION = V4L2_CID_IMAGE_STABILIZATION;
static const unsigned int PPC_V4L2_CID_AUTOBRIGHTNESS = V4L2_CID_AUTOBRIGHTNESS;
static const unsigned int PPC_V4L2_CID_HUE_AUTO = V4L2_CID_HUE_AUTO;

/* ioctl(2) with a fixed signature (the libc one is variadic). */
static inline int ppc_v4l2_ioctl(int fd, unsigned long request, void *arg) { return ioctl(fd, request, arg); }
#endif
