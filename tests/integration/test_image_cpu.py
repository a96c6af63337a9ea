#!/usr/bin/env python3
"""test_image_cpu.py — leakgate inside the CPU image that ci/image builds from ci/k8s/Dockerfile
(the soak's image, LG_CUDA=OFF), run with podman as a pod would run it (the image's entrypoint,
results on a mounted volume):

  - the gate, `leakgate run`: exit 0, a pass verdict, the reports written;
  - an injected leak, `leakgate run --inject adam-state`: exit 1, tagged_host leaks adam state;
  - a soak stopped by SIGTERM (`podman stop`, the signal Kubernetes sends at a deadline or an
    eviction): it finishes the running session, writes a verdict line that is partial, stopped
    by SIGTERM and, with no leak proven, inconclusive (a run stopped early never passes), and
    exits 3; metrics.prom says the soak is no longer running and carries that verdict; the
    reports are written.

    test_image_cpu.py SOURCE_DIR

Exit 0 when every check passes, 77 (SKIP) without podman.
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from image_common import Checks, count_type, cpu_image, last_json, podman, run_with_source  # noqa: E402


def run_in_image(image, out, *args):
    return podman("run", "--rm", "--network", "none", "-v", f"{out}:/out", image, *args)


def main(src):
    image = cpu_image(src)
    ck = Checks()
    with tempfile.TemporaryDirectory(prefix="lg-image-") as tmp:
        gate = os.path.join(tmp, "gate")
        os.mkdir(gate)
        r = run_in_image(image, gate, "run", "--out", "/out")
        v = last_json(os.path.join(gate, "results.jsonl"))
        ck.expect("the gate in the image exits 0", r.returncode == 0, f"exit {r.returncode}: {r.stderr[-500:]}")
        ck.expect("its verdict is pass", v.get("type") == "verdict" and v.get("status") == "pass", str(v.get("summary")))
        missing = [f for f in ("junit.xml", "report.html", "summary.md") if not os.path.isfile(os.path.join(gate, f))]
        ck.expect("its reports are written (junit.xml, report.html, summary.md)", not missing, f"missing {missing}")

        leak = os.path.join(tmp, "leak")
        os.mkdir(leak)
        r = run_in_image(image, leak, "run", "--inject", "adam-state", "--out", "/out")
        v = last_json(os.path.join(leak, "results.jsonl"))
        ck.expect("--inject adam-state in the image exits 1", r.returncode == 1, f"exit {r.returncode}: {r.stderr[-500:]}")
        th = next((c for c in v.get("channels", []) if c.get("channel") == "tagged_host"), {})
        ck.expect("tagged_host leaks, naming adam state", th.get("status") == "leak" and "adam." in th.get("why", ""),
                  str(th))

        soak = os.path.join(tmp, "soak")
        os.mkdir(soak)
        name = f"leakgate-soak-sigterm-{os.getpid()}"
        results = os.path.join(soak, "results.jsonl")
        try:
            r = podman("run", "-d", "--name", name, "--network", "none", "-v", f"{soak}:/out", image,
                       "soak", "--duration", "10m", "--out", "/out", "--quiet")
            started = ck.expect("a 10-minute soak starts in the image", r.returncode == 0, r.stderr.strip())
            deadline = time.time() + 120
            while started and count_type(results, "session") < 20 and time.time() < deadline:
                time.sleep(0.5)
            ck.expect("it streams sessions to results.jsonl", count_type(results, "session") >= 20,
                      f"{count_type(results, 'session')} session lines after 120 s")
            t0 = time.time()
            r = podman("stop", "--time", "120", name)  # SIGTERM; SIGKILL only after 120 s
            stop_s = time.time() - t0
            code = podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
            v = last_json(results)
            ck.expect("SIGTERM stops it within the grace period", r.returncode == 0 and stop_s < 110,
                      f"podman stop exit {r.returncode} after {stop_s:.0f} s")
            ck.expect("the last line is the verdict, partial, stopped by SIGTERM",
                      v.get("type") == "verdict" and v.get("partial") is True and v.get("stopped") == "SIGTERM",
                      str(v.get("summary")))
            ck.expect("a stopped soak with no leak proven is inconclusive, exit 3",
                      v.get("status") == "inconclusive" and v.get("exit_code") == 3 and code == "3",
                      f"exit {code}, verdict {v.get('status')} (exit_code {v.get('exit_code')})")
            try:
                with open(os.path.join(soak, "metrics.prom")) as f:
                    prom = f.read()
            except OSError:
                prom = ""
            ck.expect("metrics.prom says the soak stopped (leakgate_soak_running 0)",
                      "\nleakgate_soak_running 0\n" in prom, prom[:300])
            ck.expect("metrics.prom carries the verdict",
                      f'leakgate_verdict{{status="{v.get("status")}"}} 1' in prom, prom[-300:])
            ck.expect("the reports of the partial soak are written",
                      all(os.path.isfile(os.path.join(soak, f)) for f in ("report.html", "summary.md", "junit.xml")))
        finally:
            podman("rm", "-f", name)
    print(f"image {image}")
    return ck.finish()


if __name__ == "__main__":
    run_with_source(main, __doc__)
