"""k8s_render.py — what `kubectl apply -k ci/k8s` sends to the API server, computed without a
cluster: the kustomization's resources with its namespace, images and patches applied.

    render(src_dir, with_patches=(), tool=None)  -> [documents]

`tool` is "kubectl" (kubectl kustomize), "kustomize" (kustomize build), "python" (the small
implementation below) or None: $LG_KUSTOMIZE if set, else the first binary found, else Python. The Python implementation
covers what ci/k8s/kustomization.yaml uses — `namespace`, `images` (newName, newTag) and
strategic-merge `patches` by path — and test_k8s_schemas.py checks that it renders exactly
what kubectl does wherever kubectl is installed.
"""
import copy
import os
import shutil
import subprocess
import tempfile

import yaml

# Kinds that are not namespaced, among those a kustomization here could hold.
CLUSTER_SCOPED = {"Namespace", "PersistentVolume", "StorageClass", "ClusterRole", "ClusterRoleBinding",
                  "CustomResourceDefinition", "PriorityClass", "RuntimeClass"}
# Strategic merge keys of the lists a patch of a pod template touches (Kubernetes' patchMergeKey).
MERGE_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
              "volumes": "name", "env": "name", "volumeMounts": "mountPath", "ports": "containerPort",
              "imagePullSecrets": "name"}


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def pod_specs(doc):
    """The pod specs inside a workload object (CronJob, Job, Deployment, ..., Pod)."""
    spec = doc.get("spec", {})
    if doc.get("kind") == "Pod":
        return [spec]
    if doc.get("kind") == "CronJob":
        spec = spec.get("jobTemplate", {}).get("spec", {})
    tmpl = spec.get("template", {}).get("spec")
    return [tmpl] if tmpl else []


def strategic_merge(base, patch, key=None):
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = strategic_merge(base[k], v, k) if k in base else copy.deepcopy(v)
        return out
    if isinstance(base, list) and isinstance(patch, list) and key in MERGE_KEYS:
        # as kustomize does: the patch's new items first, in its order, then the base's, merged
        mk = MERGE_KEYS[key]
        by_key = {x.get(mk): x for x in patch if isinstance(x, dict)}
        new = [copy.deepcopy(x) for x in patch if not any(isinstance(b, dict) and b.get(mk) == x.get(mk) for b in base)]
        return new + [strategic_merge(b, by_key[b.get(mk)]) if isinstance(b, dict) and b.get(mk) in by_key
                      else copy.deepcopy(b) for b in base]
    return copy.deepcopy(patch)


def set_image(image, images):
    name = image.split("@")[0]
    if ":" in name.rsplit("/", 1)[-1]:
        name = name.rsplit(":", 1)[0]
    for i in images:
        if i.get("name") == name:
            new = i.get("newName", name)
            if "digest" in i:
                return f"{new}@{i['digest']}"
            return f"{new}:{i['newTag']}" if "newTag" in i else new
    return image


def render_python(kdir, kust):
    docs = []
    for r in kust.get("resources", []):
        docs += load_all(os.path.join(kdir, r))
    for p in kust.get("patches", []):
        for patch in load_all(os.path.join(kdir, p["path"])):
            target = p.get("target") or {"kind": patch["kind"], "name": patch["metadata"]["name"]}
            hits = [i for i, d in enumerate(docs) if d.get("kind") == target["kind"]
                    and d["metadata"]["name"] == target["name"]]
            if len(hits) != 1:
                raise ValueError(f"patch {p['path']} matches {len(hits)} resources, not 1")
            docs[hits[0]] = strategic_merge(docs[hits[0]], patch)
    ns = kust.get("namespace")
    for d in docs:
        if ns and d.get("kind") not in CLUSTER_SCOPED:
            d.setdefault("metadata", {})["namespace"] = ns
        for spec in pod_specs(d):
            for c in spec.get("containers", []) + spec.get("initContainers", []):
                if "image" in c:
                    c["image"] = set_image(c["image"], kust.get("images", []))
    return docs


def render(src_dir, with_patches=(), tool=None):
    """Documents of ci/k8s's kustomization, with `with_patches` (paths relative to ci/k8s)
    added to its patches. Raises on a tool's failure."""
    kdir = os.path.join(src_dir, "ci/k8s")
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(tmp, "k8s")
        shutil.copytree(kdir, work)
        kpath = os.path.join(work, "kustomization.yaml")
        kust = load_all(kpath)[0]
        if with_patches:
            kust["patches"] = list(kust.get("patches") or []) + [{"path": p} for p in with_patches]
            with open(kpath, "w") as f:
                yaml.safe_dump(kust, f, sort_keys=False)
        tool = tool or os.environ.get("LG_KUSTOMIZE")
        if not tool:
            tool = "kubectl" if shutil.which("kubectl") else "kustomize" if shutil.which("kustomize") else "python"
        if tool == "python":
            return render_python(work, kust)
        cmd = ["kubectl", "kustomize", work] if tool == "kubectl" else ["kustomize", "build", work]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
        return [d for d in yaml.safe_load_all(r.stdout) if d is not None]
