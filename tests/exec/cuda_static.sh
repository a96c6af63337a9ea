#!/bin/sh
# cuda_static.sh LEAKGATE SRC_DIR TMP_DIR — a program built with nvcc's default static CUDA
# runtime (libcudart_static) runs under `leakgate exec`, which must say that its device memory
# was not measured (console, verdict summary, the device channels' reasons, results.jsonl),
# while its shared-runtime twin gets no such word. Without nvcc: SKIP, exit 77 (ctest: Skipped).
set -u
leakgate=$1 src=$2 tmp=$3
nvcc=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })
if [ -z "$nvcc" ]; then
    echo "SKIP: nvcc not found (PATH, /usr/local/cuda/bin)"
    exit 77
fi
rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
fail=0
check() { # what, command...: fails the test when the command fails
    what=$1
    shift
    if ! "$@"; then
        echo "FAIL: $what"
        fail=1
    fi
}
"$nvcc" -cudart static -o "$tmp/static" "$src/cuda_static.cu" || { echo "FAIL: nvcc -cudart static"; exit 1; }
"$nvcc" -cudart shared -o "$tmp/shared" "$src/cuda_static.cu" || { echo "FAIL: nvcc -cudart shared"; exit 1; }
strip -o "$tmp/stripped" "$tmp/static" || exit 1
for b in static stripped shared; do
    "$leakgate" exec --no-reports --out "$tmp/out-$b" --session-marker '^epoch [0-9]+ done' \
        -- "$tmp/$b" 6 >"$tmp/$b.txt" 2>&1
    rc=$?
    echo "== $b: exit $rc"
    cat "$tmp/$b.txt"
    check "$b: exit $rc, expected a verdict (0, 1 or 3)" test "$rc" -le 3 -a "$rc" -ne 2
done
for b in static stripped; do
    check "$b: the console says so" grep -q "carries CUDA's static runtime" "$tmp/$b.txt"
    check "$b: the verdict says so" grep -q "device memory not measured: CMD is linked with CUDA's static runtime" "$tmp/$b.txt"
    check "$b: dev_process says why" grep -q "^dev_process .*unavailable.*static runtime" "$tmp/$b.txt"
    check "$b: results.jsonl says so" grep -q "static runtime" "$tmp/out-$b/results.jsonl"
done
check "shared: no word of a static runtime" sh -c "! grep -q 'static runtime' '$tmp/shared.txt'"
[ $fail -eq 0 ] && echo "PASS"
exit $fail
