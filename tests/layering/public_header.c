/* public_header.c — the control of test_private_headers: built against lg_render, the public
 * headers of render/ and of the libraries below it are found. */
#include "plot.h"
#include "render.h"
#include "results.h"
#include "summary.h"

int lg_probe_public(void) { return RPT_NFIGURES; }
