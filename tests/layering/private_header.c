/* private_header.c — built by test_private_headers against lg_render: it names a header private
 * to reports/results/ (results_fields.h), which must not be found (the build's privacy). */
#include "results_fields.h"

int lg_probe_private(void) { return 0; }
