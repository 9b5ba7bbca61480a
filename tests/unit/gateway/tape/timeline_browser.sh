#!/usr/bin/env bash
# Renders the tape timeline SVG in headless Chromium and checks the screenshot is a real picture
# (exists, decodes, has many colors), not an error page or a blank canvas.
# Usage: timeline_browser.sh PATH/TO/tape_timeline_demo. Exits 77 (skip) without chromium.
set -euo pipefail
demo=$1
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: chromium is not installed (scripts/setup.sh installs it)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$demo" "$work/timeline.svg" >/dev/null
test -s "$work/timeline.svg"
# A private profile and HOME: headless Chromium must not touch the user's.
HOME=$work timeout 90 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-color-profile=srgb \
  --user-data-dir="$work/profile" --window-size=1200,500 \
  --screenshot="$work/shot.png" "file://$work/timeline.svg" >"$work/chromium.log" 2>&1 || {
  cat "$work/chromium.log"
  echo "FAIL: chromium did not render the SVG"
  exit 1
}
test -s "$work/shot.png" || { echo "FAIL: no screenshot"; cat "$work/chromium.log"; exit 1; }
python3 - "$work/shot.png" <<'PY'
# Minimal PNG decoder (8-bit RGB/RGBA, non-interlaced): counts distinct colors.
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, header = 8, b"", None
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        header = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + length
width, height, depth, color, _, _, interlace = header
assert depth == 8 and color in (2, 6) and interlace == 0, f"unsupported PNG {header}"
bpp = 3 if color == 2 else 4
raw = zlib.decompress(idat)
stride = width * bpp
prev = bytearray(stride)
colors = set()
for y in range(height):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]
        c = prev[x - bpp] if x >= bpp else 0
        if f == 1:
            line[x] = (line[x] + a) & 255
        elif f == 2:
            line[x] = (line[x] + b) & 255
        elif f == 3:
            line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    prev = line
    for x in range(0, stride, bpp):
        colors.add(bytes(line[x:x + 3]))
# The timeline's palette (timeline_svg.cc): an error page or a blank canvas has none of these.
palette = {"loading": "f4a261", "locating": "e76f51", "reading": "2a9d8f", "rewinding": "8d99ae",
           "unloading": "e9c46a", "down": "343a40", "robot moving": "457b9d",
           "robot stalled": "d62828"}
seen = [name for name, hexcolor in palette.items() if bytes.fromhex(hexcolor) in colors]
print(f"screenshot {width}x{height}, {len(colors)} distinct colors; palette seen: {seen}")
assert len(colors) > 2, "the screenshot is (nearly) a single color"
assert len(seen) >= 6, "the timeline's colors are missing: the SVG did not render"
PY
echo "PASS: the timeline renders in $($browser --version 2>/dev/null || echo chromium)"
