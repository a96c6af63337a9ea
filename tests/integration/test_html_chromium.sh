#!/bin/sh
# test_html_chromium.sh — opens the HTML report in headless Chromium (Debian's `chromium`) and
# checks that it renders: the DOM has the verdict banner first with the right word and the
# plots as inline <svg>; a screenshot shows the banner in the verdict's colour and the plots'
# lines drawn. Everything is a local file: the browser runs with networking features off.
#
#   test_html_chromium.sh LG_REPORT_TOOL RESULTS_DIR
#
# Without chromium it prints SKIP and exits 77, which CTest shows as a skip, never a pass
# (ci/test installs chromium).
set -eu

tool=$1
data=$2
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
    echo "SKIP: chromium is not installed (apt-get install chromium)"
    exit 77
fi
py=/usr/bin/python3
[ -x "$py" ] || py=python3

work=$(mktemp -d /tmp/lg-chromium.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() {
    echo "FAIL: $*"
    exit 1
}

browse() { # browse PROFILE ARGS... : headless Chromium on a fresh profile, no network features
    profile=$1
    shift
    timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$work/$profile" "$@" 2>>"$work/chromium.log"
}

# check RUN WORD COLOUR PLOTS
check() {
    run=$1 word=$2 colour=$3 plots=$4
    # the report's exit status is its verdict's: 0 pass, 1 leak, 3 inconclusive; 2 and 4 fail
    st=0
    "$tool" report "$data/$run.jsonl" -o "$work/$run" >/dev/null || st=$?
    case $st in 0 | 1 | 3) ;; *) fail "lg-report failed on $run (exit $st)" ;; esac
    page="file://$work/$run/report.html"

    # one browser launch: the DOM after parsing, and a screenshot after layout and paint
    browse "p-$run" --window-size=1200,1300 --hide-scrollbars --screenshot="$work/$run.png" --dump-dom \
        "$page" >"$work/$run.dom" || fail "chromium could not load $page"
    dom="$work/$run.dom"
    grep -q "<div class=\"word\">$word</div>" "$dom" || fail "$run: the DOM lacks the verdict $word"
    first=$(sed -n 's/.*<body>[[:space:]]*\(<[a-z]*[^>]*\)>.*/\1/p' "$dom" | head -1)
    [ -n "$first" ] || first=$(tr -d '\n' <"$dom" | sed -n 's/.*<body>[[:space:]]*\(<[a-z]*[^>]*\)>.*/\1/p')
    case "$first" in
    "<header id=\"verdict\""*) ;;
    *) fail "$run: the verdict is not the first element of the page (found: $first)" ;;
    esac
    n=$(grep -o '<svg class="plot"' "$dom" | wc -l)
    [ "$n" -eq "$plots" ] || fail "$run: $n inline plots in the DOM, expected $plots"
    paths=$(grep -o '<path' "$dom" | wc -l)
    [ "$paths" -gt 100 ] || fail "$run: the plots hold only $paths paths"

    [ -s "$work/$run.png" ] || fail "$run: empty screenshot"
    "$py" - "$work/$run.png" "$colour" <<'EOF' || fail "$run: the screenshot does not show the report"
import struct, sys, zlib

def decode(path):
    """A minimal PNG reader (8-bit RGB/RGBA, not interlaced): Chromium's screenshots."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, "unsupported PNG"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    bpp = 3 if ctype == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows

try:  # Pillow when present (fast); the reader above otherwise
    from PIL import Image
    img = Image.open(sys.argv[1]).convert("RGB")
    w, h = img.size
    data = list(img.getdata())
    px = lambda x, y: data[y * w + x]
except ImportError:
    w, h, bpp, rows = decode(sys.argv[1])
    px = lambda x, y: tuple(rows[y][x * bpp:x * bpp + 3])
want = tuple(int(sys.argv[2][i:i + 2], 16) for i in (1, 3, 5))
near = lambda p, q, t=12: all(abs(a - b) <= t for a, b in zip(p, q))
banner = px(w // 2 + 300, 22)  # inside the banner's top padding
if not near(banner, want):
    sys.exit(f"banner colour {banner} is not {want}")
# the jemalloc-allocated line of the first plot is orange (#ff7f0e); nothing else on the page is
orange = sum(1 for y in range(200, h) for x in range(w) if near(px(x, y), (0xff, 0x7f, 0x0e), 40))
if orange < 150:
    sys.exit(f"only {orange} pixels of the plot's orange line: the plots did not render")
print(f"screenshot {w}x{h}: banner {banner}, {orange} orange plot-line pixels")
EOF
    echo "ok: $run renders $word with $plots plots"
}

check leaking LEAK "#c0392b" 3
check clean PASS "#1e8449" 3
echo "PASS: the HTML reports render in headless Chromium"
