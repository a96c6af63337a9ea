/* public_header.c — the control of the privacy probes: compiled against lg_reports and
 * lg_harness, the public headers of every layer are found. */
#include "exec.h"
#include "harness.h"
#include "lg_base.h"
#include "lga_wire.h"
#include "plot.h"
#include "render.h"
#include "reports.h"
#include "results.h"
#include "summary.h"
#include "tensor.h"
#include "tracking.h"
#include "trainer.h"

int lg_probe_public(void);
int lg_probe_public(void) { return RPT_NFIGURES; }
