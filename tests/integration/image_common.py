"""image_common.py — what the image tests share: the CPU image from ci/image, podman with its
configuration, SKIP (exit 77) when podman is not installed, and a check list whose exit status
is the test's."""
import json
import os
import shutil
import subprocess
import sys

SKIP = 77  # CTest's SKIP_RETURN_CODE for these tests


def cpu_image(src):
    """Builds the CPU image through `ci/image cpu` (cached) and sets CONTAINERS_CONF; returns
    the image name. Exits with SKIP when podman is not installed."""
    if not shutil.which("podman"):
        print("SKIP: podman is not installed (ci/image installs podman, mmdebstrap, runc and catatonit "
              "when run as root)")
        sys.exit(SKIP)
    r = subprocess.run([os.path.join(src, "ci/image"), "cpu"], stdout=subprocess.PIPE, text=True)
    if r.returncode:
        print(f"FAIL: ci/image cpu exited {r.returncode}")
        sys.exit(1)
    env = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    os.environ["CONTAINERS_CONF"] = env["CONTAINERS_CONF"]
    return env["LG_IMAGE_CPU"]


def podman(*args, check=False, timeout=600):
    r = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode:
        raise RuntimeError(f"podman {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def last_json(path):
    """The last line of a results file, parsed ({} when there is none)."""
    try:
        with open(path) as f:
            lines = [ln for ln in f if ln.strip()]
    except OSError:
        return {}
    return json.loads(lines[-1]) if lines else {}


def count_type(path, kind):
    try:
        with open(path) as f:
            return sum(1 for ln in f if json.loads(ln).get("type") == kind)
    except OSError:
        return 0


def run_with_source(main, usage):
    """Exits with main(src), src the source tree named by the one argument; without it, prints
    the usage and exits 2."""
    if len(sys.argv) != 2:
        print(usage)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))


class Checks:
    def __init__(self):
        self.failures = 0
        self.passed = 0

    def expect(self, what, ok, detail=""):
        print(("ok   " if ok else "FAIL ") + what + (f" ({detail})" if detail and not ok else ""))
        if ok:
            self.passed += 1
        else:
            self.failures += 1
        return ok

    def finish(self):
        print(f"{self.passed} passed, {self.failures} failed")
        return 1 if self.failures else 0
