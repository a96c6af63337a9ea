#!/usr/bin/env python3
"""k8s_pods.py — the pods the nightly soak's Jobs would create, derived from the real manifests
(ci/k8s, rendered as `kubectl apply -k` would, optionally with the textfile-collector patch), for
`podman kube play` on a machine without Kubernetes or a GPU.

    k8s_pods.py SOURCE_DIR OUT_DIR --image IMG [--suffix S] [--shards N] [--duration D]
                [--merge-shards M] [--merge-wait S] [--textfile-dir DIR]

writes OUT_DIR/pvc.yaml (the results PersistentVolumeClaim; podman makes it a named volume),
OUT_DIR/soak-<i>.yaml (shard i's pod) and OUT_DIR/merge.yaml (the merge pod). What changes from
the Job templates, and nothing else:
  - what the Job controller adds to an Indexed Job's pod: JOB_COMPLETION_INDEX=i;
  - the image (a local one), and --device cuda becomes --device cpu, without the nvidia.com/gpu
    resources and the GPU toleration;
  - LG_SHARDS (soak and merge), LG_SOAK_DURATION, LG_SOAK_PRESETS/MODES (tiny, fp32+int8) and
    LG_MERGE_WAIT, to fit a test;
  - names get SUFFIX (the claim too), so concurrent runs do not share a volume; with
    --textfile-dir, the textfile collector's hostPath is that directory.
"""
import argparse
import copy
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k8s_render  # noqa: E402

PATCH = "textfile-collector-patch.yaml"


def set_env(container, name, value):
    env = container.setdefault("env", [])
    for e in env:
        if e["name"] == name:
            e["value"] = str(value)
            return
    env.append({"name": name, "value": str(value)})


def job_pod(cronjob, name, image, claim, textfile_dir):
    tmpl = copy.deepcopy(cronjob["spec"]["jobTemplate"]["spec"]["template"])
    meta = {"name": name, "labels": tmpl.get("metadata", {}).get("labels", {})}
    spec = tmpl["spec"]
    spec.pop("tolerations", None)
    for c in spec["containers"]:
        c["image"] = image
        for part in ("requests", "limits"):
            c.get("resources", {}).get(part, {}).pop("nvidia.com/gpu", None)
    for v in spec.get("volumes", []):
        if "persistentVolumeClaim" in v:
            v["persistentVolumeClaim"]["claimName"] = claim
        if "hostPath" in v:
            if not textfile_dir:
                raise SystemExit(f"{name}: the pod has a hostPath volume ({v['name']}): give --textfile-dir")
            v["hostPath"]["path"] = textfile_dir
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def cpu_script(container):
    args = container["args"]
    if len(args) != 1 or args[0].count("--device cuda") != 1:
        raise SystemExit("the soak's script must hold `--device cuda` exactly once")
    container["args"] = [args[0].replace("--device cuda", "--device cpu")]


def make(src, out, image, suffix="", shards=2, duration="8s", merge_shards=None, merge_wait=120,
         textfile_dir=None):
    """Writes the pod files; returns {"claim", "pvc", "soak": [paths], "merge", "pods": {...}}."""
    docs = k8s_render.render(src, with_patches=(PATCH,) if textfile_dir else ())
    by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    claim = "leakgate-results" + suffix
    pvc = copy.deepcopy(by[("PersistentVolumeClaim", "leakgate-results")])
    pvc["metadata"] = {"name": claim, "labels": pvc["metadata"].get("labels", {})}
    os.makedirs(out, exist_ok=True)
    files = {"claim": claim, "pvc": os.path.join(out, "pvc.yaml"), "soak": [], "pods": {}}
    with open(files["pvc"], "w") as f:
        yaml.safe_dump(pvc, f, sort_keys=False)

    soak = by[("CronJob", "leakgate-soak")]
    for i in range(shards):
        name = f"leakgate-soak-{i}{suffix}"
        pod = job_pod(soak, name, image, claim, textfile_dir)
        c = pod["spec"]["containers"][0]
        cpu_script(c)
        set_env(c, "JOB_COMPLETION_INDEX", i)
        set_env(c, "LG_SHARDS", shards)
        set_env(c, "LG_SOAK_DURATION", duration)
        set_env(c, "LG_SOAK_PRESETS", "tiny")
        set_env(c, "LG_SOAK_MODES", "fp32,int8")
        path = os.path.join(out, f"soak-{i}.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(pod, f, sort_keys=False)
        files["soak"].append(path)
        files["pods"][path] = (name, f"{name}-{c['name']}")

    merge = by[("CronJob", "leakgate-merge")]
    name = f"leakgate-merge{suffix}"
    pod = job_pod(merge, name, image, claim, textfile_dir)
    c = pod["spec"]["containers"][0]
    set_env(c, "LG_SHARDS", merge_shards if merge_shards is not None else shards)
    set_env(c, "LG_MERGE_WAIT", merge_wait)
    files["merge"] = os.path.join(out, "merge.yaml")
    with open(files["merge"], "w") as f:
        yaml.safe_dump(pod, f, sort_keys=False)
    files["pods"][files["merge"]] = (name, f"{name}-{c['name']}")
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--image", required=True)
    ap.add_argument("--suffix", default="")
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--duration", default="8s")
    ap.add_argument("--merge-shards", type=int)
    ap.add_argument("--merge-wait", type=int, default=120)
    ap.add_argument("--textfile-dir")
    a = ap.parse_args()
    files = make(a.src, a.out, a.image, a.suffix, a.shards, a.duration, a.merge_shards, a.merge_wait,
                 a.textfile_dir)
    for path, (pod, container) in files["pods"].items():
        print(f"{path}\tpod {pod}\tcontainer {container}")
    print(f"{files['pvc']}\tclaim {files['claim']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
