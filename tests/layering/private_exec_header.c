/* private_exec_header.c — built by test_private_headers_exec against lg_harness: it names exec's
 * private header (harness/exec/exec_impl.h), which the rest of harness/ must not find. */
#include "exec_impl.h"

int lg_probe_private_exec(void) { return 0; }
