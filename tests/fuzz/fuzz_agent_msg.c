/* fuzz_agent_msg.c — libFuzzer target for the SESSION message `leakgate exec` reads from the
 * agent in its program (harness/exec/exec_msg.c). The program is not trusted: it can write its own
 * messages to the agent's socket. The input is a payload; it must either decode — and then
 * the session `exec` would write must read back through the results loader, as `report`
 * reads it — or fail with LG_EFORMAT (LG_ENOMEM is allowed). ASan and LSan watch every path.
 *
 *   ci/fuzz 60 fuzz_agent_msg
 * Seeds: tests/fuzz/agent (python3 tests/fuzz/agent/make_seeds.py writes them).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_impl.h"
#include "lg_fuzz.h"
#include "results_json.h"
#include "rpt_text.h"
#include "summary.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rpt_session s, back;
    struct hx_exec_msg m;
    memset(&s, 0, sizeof s);
    memset(&back, 0, sizeof back);
    int rc = hx_exec_decode_session(data, size, NULL, &s, &m);
    if (rc == LG_OK) {
        json_t *o = rpt_session_to_json(&s);
        if (!o) lg_fuzz_die("a decoded session could not be encoded");
        const struct rpt_dec d = {"agent message", 1};
        if (rpt_session_from_json(&d, o, &back) != LG_OK) {
            fprintf(stderr, "fuzz_agent_msg: %s\n", lg_errmsg());
            lg_fuzz_die("exec would write a session the results loader refuses");
        }
        json_decref(o);
    } else if (rc != LG_EFORMAT && rc != LG_ENOMEM) {
        fprintf(stderr, "fuzz_agent_msg: status %d (%s)\n", rc, lg_errmsg());
        abort();
    }
    hx_keep_fini(&m.keep);
    rpt_session_fini(&back);
    rpt_session_fini(&s);
    return 0;
}
