/* lg_fuzz.h — what the libFuzzer targets share: a failed promise aborts naming the target and
 * the last error message, one tracker for the whole run that must be empty after every input,
 * and an in-memory file to hand a reader by its /proc path.
 *
 *   // LLVMFuzzerInitialize (weak, in lg_fuzz.c) calls lg_fuzz_init; a target may define its own
 *   int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
 *   {
 *       const char *path = lg_fuzz_file(data, size);
 *       ... if (broken) lg_fuzz_die("what broke");
 *       lg_fuzz_check_tracker();
 *       return 0;
 *   }
 */
#ifndef LG_FUZZ_H
#define LG_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "tracking.h"

extern struct trk_tracker *lg_fuzz_trk; /* made by lg_fuzz_init, lives for the run */

/* Prints "<target>: what (<last error message>)" and aborts, so libFuzzer keeps the input. */
_Noreturn void lg_fuzz_die(const char *what);
/* Makes lg_fuzz_trk (stacks off); the default LLVMFuzzerInitialize calls it. */
void lg_fuzz_init(void);
int LLVMFuzzerInitialize(int *argc, char ***argv);
/* Dies unless lg_fuzz_trk holds zero live bytes and saw no invalid free. */
void lg_fuzz_check_tracker(void);
/* The input as the only content of one in-memory file (a memfd, reused across inputs); its
 * /proc/self/fd path, valid for the run. */
const char *lg_fuzz_file(const uint8_t *data, size_t size);

#endif
