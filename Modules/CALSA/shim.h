#ifndef PPC_CALSA_SHIM_H
#define PPC_CALSA_SHIM_H
#include <alsa/asoundlib.h>

/* snd_lib_error_set_handler takes a variadic callback Swift cannot write: this one discards libasound's own stderr
   chatter (every failure reaches Swift as a return code, named there). */
static void ppc_alsa_quiet_handler(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}
static inline void ppc_alsa_silence_errors(void) { snd_lib_error_set_handler(ppc_alsa_quiet_handler); }
#endif
