#!/usr/bin/env python3
"""test_manifests.py — the structure of the CI manifests: the Kubernetes nightly soak
(ci/k8s: an Indexed CronJob with one GPU per shard, results on a volume, a merge step) and the
GitHub workflow (ci/github/gate.yml: on push and pull requests, ci/test and ci/gate, artefacts
uploaded, JUnit published). Each check is also run against a broken copy, to show it can fail.

    test_manifests.py SOURCE_DIR [LEAKGATE_BIN]

With LEAKGATE_BIN, every option the soak's and the merge's command lines use must appear in
`leakgate soak --help` and `leakgate merge --help`. Exit status 0 when every check passes; needs python3-yaml.
"""
import copy
import glob
import os
import re
import shlex
import subprocess
import sys

try:
    import yaml
except ImportError:
    print("FAIL: python3-yaml is missing (apt-get install python3-yaml; ci/test installs it)")
    sys.exit(1)


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def env_of(container):
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def script_of(container):
    return " ".join(container.get("command", []) + container.get("args", []))


def pod_spec(cronjob):
    return cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def cron_ok(expr):
    fields = str(expr).split()
    return len(fields) == 5 and all(re.fullmatch(r"[0-9*/,\-]+", f) for f in fields)


def daily_minutes(expr):
    """Minutes after midnight of a daily 'M H * * *' schedule, else None."""
    m = re.fullmatch(r"(\d+) (\d+) \* \* \*", str(expr))
    return int(m.group(1)) + 60 * int(m.group(2)) if m else None


def duration_s(text):
    total, rest = 0, str(text)
    for num, unit in re.findall(r"(\d+(?:\.\d+)?)([smhd]?)", rest):
        total += float(num) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
    return total


def check_volumes(name, spec, pvc_names, problems):
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    for c in spec["containers"]:
        mounts = c.get("volumeMounts", [])
        if not any(m.get("mountPath") == "/results" for m in mounts):
            problems.append(f"{name}: container {c['name']} does not mount the results volume at /results")
        for m in mounts:
            if m["name"] not in volumes:
                problems.append(f"{name}: volumeMount {m['name']} has no volume")
            elif m.get("mountPath") == "/results":
                claim = volumes[m["name"]].get("persistentVolumeClaim", {}).get("claimName")
                if claim not in pvc_names:
                    problems.append(f"{name}: /results is not the PersistentVolumeClaim {sorted(pvc_names)}")


def check_k8s(docs, help_text):
    """docs: {file name: [documents]}. Returns a list of problems."""
    problems = []
    objs = [d for ds in docs.values() for d in ds]
    kust = docs.get("kustomization.yaml", [{}])[0]
    if kust.get("apiVersion") != "kustomize.config.k8s.io/v1beta1" or kust.get("kind") != "Kustomization":
        problems.append("kustomization.yaml: not a kustomize.config.k8s.io/v1beta1 Kustomization")
    for r in kust.get("resources", []):
        if r not in docs:
            problems.append(f"kustomization.yaml: resource {r} does not exist in ci/k8s")
    if not any(i.get("name") == "leakgate" for i in kust.get("images", [])):
        problems.append("kustomization.yaml: no images entry for the 'leakgate' image")
    pvcs = {o["metadata"]["name"] for o in objs if o.get("kind") == "PersistentVolumeClaim"}
    if not pvcs:
        problems.append("no PersistentVolumeClaim for the results")
    cronjobs = {o["metadata"]["name"]: o for o in objs if o.get("kind") == "CronJob" and "schedule" in o.get("spec", {})}
    soak = cronjobs.get("leakgate-soak")
    merge = cronjobs.get("leakgate-merge")
    if not soak or not merge:
        return problems + ["CronJobs leakgate-soak and leakgate-merge must both exist"]
    for cj in (soak, merge):
        name = cj["metadata"]["name"]
        if cj.get("apiVersion") != "batch/v1":
            problems.append(f"{name}: apiVersion {cj.get('apiVersion')}, expected batch/v1")
        if not cron_ok(cj["spec"].get("schedule")):
            problems.append(f"{name}: schedule {cj['spec'].get('schedule')!r} is not a cron expression")
        spec = pod_spec(cj)
        if spec.get("restartPolicy") != "Never":
            problems.append(f"{name}: restartPolicy must be Never (a rerun would overwrite results)")
        for c in spec["containers"]:
            if c.get("image") != "leakgate":
                problems.append(f"{name}: image {c.get('image')!r} is not the kustomize-managed 'leakgate'")
        check_volumes(name, spec, pvcs, problems)

    # the soak: Indexed, n pods, one GPU each, --shard from JOB_COMPLETION_INDEX
    job = soak["spec"]["jobTemplate"]["spec"]
    spec = pod_spec(soak)
    c = spec["containers"][0]
    env = env_of(c)
    if job.get("completionMode") != "Indexed":
        problems.append("leakgate-soak: completionMode must be Indexed")
    n = job.get("completions")
    if not isinstance(n, int) or n < 1 or job.get("parallelism") != n:
        problems.append(f"leakgate-soak: completions ({n}) and parallelism ({job.get('parallelism')}) must be equal")
    if str(env.get("LG_SHARDS")) != str(n):
        problems.append(f"leakgate-soak: LG_SHARDS {env.get('LG_SHARDS')} != completions {n}")
    limits = c.get("resources", {}).get("limits", {})
    if str(limits.get("nvidia.com/gpu")) != "1":
        problems.append("leakgate-soak: each pod must have the limit nvidia.com/gpu: 1")
    requests = c.get("resources", {}).get("requests", {})
    if "nvidia.com/gpu" in requests and str(requests["nvidia.com/gpu"]) != "1":
        problems.append("leakgate-soak: GPU request differs from its limit")
    script = script_of(c)
    if "leakgate soak" not in script or "--device cuda" not in script:
        problems.append("leakgate-soak: the command is not `leakgate soak --device cuda ...`")
    if not re.search(r"--shard\s+\"?\$\{?JOB_COMPLETION_INDEX\}?/", script):
        problems.append("leakgate-soak: --shard does not come from $JOB_COMPLETION_INDEX")
    if not re.search(r"--out\s+\"?\$out|--out\s+\"?/results", script):
        problems.append("leakgate-soak: --out is not on the results volume")
    rules = job.get("podFailurePolicy", {}).get("rules", [])
    for r in rules:
        cn = r.get("onExitCodes", {}).get("containerName")
        if cn and cn != c["name"]:
            problems.append(f"leakgate-soak: podFailurePolicy names container {cn}, not {c['name']}")
    if not any(r.get("action") in ("FailIndex", "FailJob") and 1 in r.get("onExitCodes", {}).get("values", [])
               for r in rules):
        problems.append("leakgate-soak: exit 1 (leak) must not be retried (podFailurePolicy)")
    deadline = job.get("activeDeadlineSeconds", 0)
    if deadline <= duration_s(env.get("LG_SOAK_DURATION", "0")):
        problems.append("leakgate-soak: activeDeadlineSeconds must exceed the soak's duration")
    if spec.get("terminationGracePeriodSeconds", 30) < 60:
        problems.append("leakgate-soak: the grace period must leave time for the verdict and reports")
    if help_text is not None:
        soak_cmd = script[script.index("leakgate soak"):]
        for flag in sorted(set(re.findall(r"(--[a-z][a-z0-9-]*)", soak_cmd))):
            if flag not in help_text["soak"]:
                problems.append(f"leakgate-soak: `leakgate soak --help` does not know {flag}")

    # the merge: after the soak's deadline, same shard count, `leakgate merge`, no GPU
    mc = pod_spec(merge)["containers"][0]
    menv = env_of(mc)
    if str(menv.get("LG_SHARDS")) != str(n):
        problems.append(f"leakgate-merge: LG_SHARDS {menv.get('LG_SHARDS')} != the soak's {n}")
    if "leakgate merge" not in script_of(mc):
        problems.append("leakgate-merge: the command is not `leakgate merge ...`")
    elif not re.search(r"leakgate merge\s.*--shards\s+\"?\$\{?LG_SHARDS\}?", script_of(mc)):
        problems.append("leakgate-merge: `leakgate merge` is not given --shards \"$LG_SHARDS\" "
                        "(without it, a directory with fewer shards than the plan merges)")
    if "nvidia.com/gpu" in mc.get("resources", {}).get("limits", {}):
        problems.append("leakgate-merge: the merge needs no GPU")
    if help_text is not None and "leakgate merge" in script_of(mc):
        merge_cmd = script_of(mc)[script_of(mc).index("leakgate merge"):].split("\n")[0]
        for flag in sorted(set(re.findall(r"(--[a-z][a-z0-9-]*)", merge_cmd))):
            if flag not in help_text["merge"]:
                problems.append(f"leakgate-merge: `leakgate merge --help` does not know {flag}")
    start, after = daily_minutes(soak["spec"]["schedule"]), daily_minutes(merge["spec"]["schedule"])
    if start is None or after is None or after * 60 < start * 60 + deadline or after >= 24 * 60:
        problems.append("leakgate-merge: must run after the soak's start plus its deadline, the same UTC day")

    for cj in (soak, merge):
        for ct in pod_spec(cj)["containers"]:
            if ct.get("command", [])[:2] == ["/bin/sh", "-c"]:
                r = subprocess.run(["sh", "-n", "-c", "\n".join(ct.get("args", []))], capture_output=True, text=True)
                if r.returncode:
                    problems.append(f"{cj['metadata']['name']}: the shell script does not parse: {r.stderr.strip()}")

    patch = docs.get("textfile-collector-patch.yaml", [{}])[0]
    if patch.get("metadata", {}).get("name") != "leakgate-soak":
        problems.append("textfile-collector-patch.yaml does not patch leakgate-soak")
    elif pod_spec(patch)["containers"][0].get("name") != c["name"]:
        problems.append("textfile-collector-patch.yaml names another container")
    return problems


def check_workflow(wf, gate_script):
    problems = []
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as true
    triggers = set(on) if isinstance(on, (dict, list)) else {on}
    for t in ("push", "pull_request"):
        if t not in triggers:
            problems.append(f"gate.yml: not triggered on {t}")
    steps = [s for j in wf.get("jobs", {}).values() for s in j.get("steps", [])]
    runs = [(s, s.get("run", "")) for s in steps]
    test = next((s for s, r in runs if re.search(r"(^|\s)ci/test(\s|$)", r)), None)
    gate = next((s for s, r in runs if re.search(r"(^|\s)ci/gate(\s|$)", r)), None)
    if not test:
        problems.append("gate.yml: no step runs ci/test")
    if not gate:
        problems.append("gate.yml: no step runs ci/gate")
    elif "cancelled()" not in str(gate.get("if", "")) and "always()" not in str(gate.get("if", "")):
        problems.append("gate.yml: the gate must run even when a test failed")
    uploads = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    paths = "\n".join(str(s.get("with", {}).get("path", "")) for s in uploads)
    for want in ("junit.xml", "report.html", "summary.md", ".png", ".svg"):
        if want not in paths:
            problems.append(f"gate.yml: no upload-artifact step uploads {want}")
    if any("always()" not in str(s.get("if", "")) and "cancelled()" not in str(s.get("if", "")) for s in uploads):
        problems.append("gate.yml: artefacts must be uploaded when the gate fails too")
    if not any("junit" in str(s.get("uses", "")).lower() for s in steps):
        problems.append("gate.yml: no step publishes the JUnit results")
    if "GITHUB_STEP_SUMMARY" not in gate_script:
        problems.append("ci/gate does not append summary.md to $GITHUB_STEP_SUMMARY")
    return problems


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    src = sys.argv[1]
    help_text = None
    if len(sys.argv) > 2:
        help_text = {cmd: subprocess.run([sys.argv[2], cmd, "--help"], capture_output=True, text=True).stdout
                     for cmd in ("soak", "merge")}
    k8s = {os.path.basename(p): load_all(p) for p in sorted(glob.glob(os.path.join(src, "ci/k8s/*.yaml")))}
    wf = load_all(os.path.join(src, "ci/github/gate.yml"))[0]
    with open(os.path.join(src, "ci/gate")) as f:
        gate_script = f.read()
    failures = 0

    def expect(what, problems, clean):
        nonlocal failures
        ok = (not problems) if clean else bool(problems)
        print(("ok   " if ok else "FAIL ") + what + ("" if clean else f" -> {problems[:1]}"))
        if clean:
            for p in problems:
                print("     " + p)
        failures += not ok

    expect("ci/k8s manifests", check_k8s(k8s, help_text), True)
    expect("ci/github/gate.yml", check_workflow(wf, gate_script), True)

    def soak_of(docs):
        return next(d for d in docs["soak-cronjob.yaml"] if d.get("kind") == "CronJob")

    def merge_of(docs):
        return next(d for d in docs["merge-cronjob.yaml"] if d.get("kind") == "CronJob")

    def broken(mutate):
        docs = copy.deepcopy(k8s)
        mutate(docs)
        return check_k8s(docs, help_text)

    mutations = {
        "NonIndexed completion": lambda d: soak_of(d)["spec"]["jobTemplate"]["spec"].update(completionMode="NonIndexed"),
        "parallelism != completions": lambda d: soak_of(d)["spec"]["jobTemplate"]["spec"].update(parallelism=1),
        "no GPU limit": lambda d: pod_spec(soak_of(d))["containers"][0]["resources"]["limits"].pop("nvidia.com/gpu"),
        "a fixed shard": lambda d: pod_spec(soak_of(d))["containers"][0].update(
            args=[pod_spec(soak_of(d))["containers"][0]["args"][0].replace("${JOB_COMPLETION_INDEX}", "0")]),
        "no results mount": lambda d: pod_spec(soak_of(d))["containers"][0].update(volumeMounts=[]),
        "bad schedule": lambda d: soak_of(d)["spec"].update(schedule="nightly"),
        "apiVersion batch/v1beta1": lambda d: soak_of(d).update(apiVersion="batch/v1beta1"),
        "a shell syntax error": lambda d: pod_spec(soak_of(d))["containers"][0].update(
            args=[pod_spec(soak_of(d))["containers"][0]["args"][0] + "\nif then fi\n"]),
    }
    mutations["a merge without --shards"] = lambda d: pod_spec(merge_of(d))["containers"][0].update(
        args=[pod_spec(merge_of(d))["containers"][0]["args"][0].replace(' --shards "$LG_SHARDS"', "")])
    if help_text is not None:
        mutations["an unknown soak flag"] = lambda d: pod_spec(soak_of(d))["containers"][0].update(
            args=[pod_spec(soak_of(d))["containers"][0]["args"][0].replace("--window", "--windows")])
    for what, mutate in mutations.items():
        expect("catches " + what, broken(mutate), False)

    def broken_wf(mutate):
        w = copy.deepcopy(wf)
        mutate(w)
        return check_workflow(w, gate_script)

    wf_steps = lambda w: next(iter(w["jobs"].values()))["steps"]  # noqa: E731
    expect("catches a workflow without push", broken_wf(lambda w: (w.pop("on", None), w.pop(True, None),
                                                                    w.update({"on": {"pull_request": None}}))), False)
    expect("catches a workflow without ci/gate",
           broken_wf(lambda w: w["jobs"]["gate"].update(steps=[s for s in wf_steps(w) if "ci/gate" not in s.get("run", "")])),
           False)
    expect("catches a workflow without uploads",
           broken_wf(lambda w: w["jobs"]["gate"].update(
               steps=[s for s in wf_steps(w) if "upload-artifact" not in str(s.get("uses", ""))])), False)
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
