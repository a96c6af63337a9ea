#!/usr/bin/env python3
"""test_kube_play.py — the nightly soak's pods, as the real manifests define them, run with
`podman kube play` on the CPU image: what a cluster would run, less the scheduler and the GPU.

k8s_pods.py derives the pods from ci/k8s rendered as `kubectl apply -k` would, with the
textfile-collector patch (the Job controller's JOB_COMPLETION_INDEX added, --device cpu, a
local image, a short duration). Then:

  - the PersistentVolumeClaim (pvc.yaml) becomes a podman volume;
  - two soak shards run at once on it: each exits 0 with a pass verdict in
    /results/<date>/shard-i-of-2/, and writes its metrics as leakgate-soak-shard-i.prom into the
    textfile collector's directory (the patch's hostPath), labelled shard="i/2";
  - the merge pod waits for both verdict lines, merges, exits 0: merged/ has a pass verdict
    over both shards' sessions and the reports;
  - with shard 1's directory gone, the merge exits 2 and names the missing shard;
  - with both shards present but LG_SHARDS=3 (the plan had 2), the merge exits 2: the
    directory does not hold the 3 shards the merge was told to expect.

    test_kube_play.py SOURCE_DIR

Exit 0 when every check passes, 77 (SKIP) without podman.
"""
import glob
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k8s_pods  # noqa: E402
from image_common import Checks, count_type, cpu_image, last_json, podman, run_with_source  # noqa: E402


class Pods:
    """Pods and the volume this test made, removed at the end."""

    def __init__(self):
        self.pods, self.volumes = [], []

    def play(self, path, pod, container):
        r = podman("kube", "play", path)
        if r.returncode:
            return None, f"podman kube play {os.path.basename(path)}: {r.stderr.strip()}"
        self.pods.append(pod)
        return container, ""

    def wait(self, container, timeout=600):
        r = podman("wait", container, timeout=timeout)
        code = r.stdout.strip()
        r = podman("logs", container)
        logs = r.stdout + r.stderr
        return (int(code) if code.lstrip("-").isdigit() else None), logs

    def remove(self, pod):
        podman("pod", "rm", "-f", pod)
        if pod in self.pods:
            self.pods.remove(pod)

    def cleanup(self):
        for p in list(self.pods):
            self.remove(p)
        for v in self.volumes:
            podman("volume", "rm", "-f", v)


def merge_run(ck, pods, src, out, image, suffix, textfile, what, merge_shards, wait):
    files = k8s_pods.make(src, out, image, suffix=suffix, shards=2, merge_shards=merge_shards,
                          merge_wait=wait, textfile_dir=textfile)
    pod, container = files["pods"][files["merge"]]
    pods.remove(pod)
    c, err = pods.play(files["merge"], pod, container)
    if not ck.expect(f"{what}: the merge pod starts", c is not None, err):
        return None, ""
    code, logs = pods.wait(c)
    pods.remove(pod)
    return code, logs


def main(src):
    image = cpu_image(src)
    ck = Checks()
    pods = Pods()
    suffix = f"-t{os.getpid()}"
    with tempfile.TemporaryDirectory(prefix="lg-kube-") as tmp:
        textfile = os.path.join(tmp, "textfile_collector")
        out = os.path.join(tmp, "pods")
        try:
            files = k8s_pods.make(src, out, image, suffix=suffix, shards=2, duration="8s", textfile_dir=textfile)
            r = podman("kube", "play", files["pvc"])
            pods.volumes.append(files["claim"])
            ck.expect("pvc.yaml becomes a podman volume", r.returncode == 0, r.stderr.strip())
            mount = podman("volume", "inspect", "--format", "{{.Mountpoint}}", files["claim"]).stdout.strip()

            running = []
            for path in files["soak"]:
                pod, container = files["pods"][path]
                c, err = pods.play(path, pod, container)
                ck.expect(f"{os.path.basename(path)}: the soak pod starts", c is not None, err)
                if c:
                    running.append(c)
            codes = {}
            for c in running:
                codes[c], logs = pods.wait(c)
                ck.expect(f"{c} exits 0", codes[c] == 0, f"exit {codes[c]}: {logs[-800:]}")
            days = sorted(glob.glob(os.path.join(mount, "20*")))
            ck.expect("the shards write /results/<UTC date>/", len(days) == 1, str(days))
            day = days[-1] if days else os.path.join(mount, "none")
            sessions = 0
            for i in range(2):
                res = os.path.join(day, f"shard-{i}-of-2", "results.jsonl")
                v = last_json(res)
                sessions += count_type(res, "session")
                ck.expect(f"shard {i}/2: a pass verdict", v.get("type") == "verdict" and v.get("status") == "pass",
                          str(v.get("summary")))
                prom = os.path.join(textfile, f"leakgate-soak-shard-{i}.prom")
                text = open(prom).read() if os.path.isfile(prom) else ""
                ck.expect(f"shard {i}/2: its metrics in the textfile collector, labelled shard=\"{i}/2\"",
                          f'leakgate_soak_running{{shard="{i}/2"}} 0' in text, prom)

            code, logs = merge_run(ck, pods, src, out, image, suffix, textfile, "2 of 2 shards", None, 120)
            mv = last_json(os.path.join(day, "merged", "results.jsonl"))
            ck.expect("the merge of 2 of 2 shards exits 0", code == 0, f"exit {code}: {logs[-800:]}")
            ck.expect("merged/: a pass verdict over both shards",
                      mv.get("status") == "pass" and "2 shard(s)" in mv.get("summary", ""), str(mv.get("summary")))
            merged_sessions = count_type(os.path.join(day, "merged", "results.jsonl"), "session")
            ck.expect("merged/ holds every shard's sessions", merged_sessions == sessions and sessions > 0,
                      f"{merged_sessions} merged, {sessions} in the shards")
            ck.expect("merged/ has the reports",
                      all(os.path.isfile(os.path.join(day, "merged", f)) for f in ("report.html", "summary.md", "junit.xml")))

            gone = os.path.join(tmp, "shard-1-of-2")
            shutil.move(os.path.join(day, "shard-1-of-2"), gone)
            shutil.rmtree(os.path.join(day, "merged"), ignore_errors=True)
            code, logs = merge_run(ck, pods, src, out, image, suffix, textfile, "shard 1 missing", None, 0)
            ck.expect("with shard 1/2 gone the merge exits 2", code == 2, f"exit {code}: {logs[-800:]}")
            ck.expect("and names the missing shard", "1/2" in logs and "missing" in logs, logs[-800:])
            shutil.move(gone, os.path.join(day, "shard-1-of-2"))

            shutil.rmtree(os.path.join(day, "merged"), ignore_errors=True)
            code, logs = merge_run(ck, pods, src, out, image, suffix, textfile, "LG_SHARDS=3", 3, 0)
            ck.expect("with LG_SHARDS=3 and 2 shards present the merge exits 2", code == 2,
                      f"exit {code}: {logs[-800:]}")
            ck.expect("and says it was told of 3 shards (--shards 3)", "--shards 3" in logs, logs[-800:])
            ck.expect("and writes no merged verdict", not os.path.exists(os.path.join(day, "merged", "results.jsonl")))
        finally:
            pods.cleanup()
    print(f"image {image}")
    return ck.finish()


if __name__ == "__main__":
    run_with_source(main, __doc__)
