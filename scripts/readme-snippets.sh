#!/usr/bin/env bash
# Compiles every ```swift block of README.md (or of the Markdown files given: the DocC landing pages) as a new user
# would, and runs the ones that are programs.
#
# Each block becomes the main.swift of its own executable target in a fresh package (generated under
# .build/readme-snippets) that depends on the SDK by path, on exactly the SDK products the block imports; nothing
# is added to the block, so it compiles only if it states its own imports (Foundation included). A block is run
# unless the HTML comment on the line before it says otherwise:
#     <!-- snippet: compile-only -->   compiled, not run (e.g. a program that serves forever)
#     <!-- snippet: skip -->           neither (e.g. a Package.swift fragment); say why after the word
# Running needs no internet: the script serves generated images from a local server on 127.0.0.1 and rewrites
# every `https://example.com/` in the blocks to that server before compiling (the only change made to a block).
# The image at each such URL is made with Pillow from its extension (.jpg, .png, .webp, .gif); a run passes
# when the program exits 0 within the time limit and the server answered every URL of the block with 200.
#
# Usage: scripts/readme-snippets.sh [FILE...]   (default README.md; any Markdown files with swift blocks, each
#        must have one; all blocks of all files build as one package, so the SDK builds once)
# Environment: EXAMPLES_SCRATCH  a scratch path to build in (shared with the examples, so their build is reused);
#              SWIFT, SNIPPET_TIMEOUT (seconds per run, default 120).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "$#" -eq 0 ]; then set -- "$root/README.md"; fi
files=()
for file in "$@"; do files+=("$(realpath "$file")"); done
swift=${SWIFT:-swift}
fail() { echo "readme-snippets: FAIL: $*" >&2; exit 1; }

# Pillow comes from Debian's python3-pil (scripts/install-deps.sh --test), which is /usr/bin/python3's.
python=""
for candidate in python3 /usr/bin/python3; do
    if "$candidate" -c 'import PIL' 2>/dev/null; then python=$candidate; break; fi
done
[ -n "$python" ] || fail "no python3 with Pillow (apt-get install python3-pil)"

package=$root/.build/readme-snippets
work=$(mktemp -d)
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# The local image server: python's http.server on a free port of 127.0.0.1, logging every request.
mkdir -p "$work/site"
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$python" -m http.server "$port" --bind 127.0.0.1 --directory "$work/site" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done
base="http://127.0.0.1:$port"

# Extract the blocks into the package and write the plan: one line per block,
# "target<TAB>mode<TAB>file<TAB>line<TAB>paths".
"$python" - "$root" "$package" "$base" "$work/site" "${files[@]}" >"$work/plan.tsv" <<'PY'
import os, re, shutil, sys
from PIL import Image, ImageDraw

root, package, base, site, *files = sys.argv[1:]
products = re.findall(r'\.library\(\s*name:\s*"(\w+)"', open(os.path.join(root, "Package.swift")).read())
marker = re.compile(r'^\s*<!--\s*snippet:\s*([\w-]+)\b.*-->\s*$')
fence = re.compile(r'^(\s*)(```+|~~~+)\s*(\S*)')
blocks = []
for readme in files:
    lines, i, found = open(readme).read().split("\n"), 0, 0
    while i < len(lines):
        m = fence.match(lines[i])
        if not m:
            i += 1
            continue
        indent, close, language = m.group(1), m.group(2), m.group(3)
        start, body, i = i, [], i + 1
        while i < len(lines) and not lines[i].strip().startswith(close):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        if language != "swift":
            continue
        previous = start - 1
        while previous >= 0 and not lines[previous].strip():
            previous -= 1
        mode = "run"
        if previous >= 0 and (mm := marker.match(lines[previous])):
            mode = mm.group(1)
            if mode not in ("run", "compile-only", "skip"):
                sys.exit(f"{readme}:{previous + 1}: unknown snippet mode '{mode}' (run, compile-only, skip)")
        # The line of the block's first code line (1-based).
        blocks.append((readme, start + 2, mode, "\n".join(body) + "\n"))
        found += 1
    if not found:
        sys.exit(f"{readme}: no ```swift block found")

shutil.rmtree(os.path.join(package, "Sources"), ignore_errors=True)
targets = []
for number, (readme, line, mode, code) in enumerate(blocks, 1):
    name = f"Snippet{number}"
    if mode == "skip":
        print(f"{name}\tskip\t{readme}\t{line}\t")
        continue
    paths = sorted(set(re.findall(r'https://example\.com(/[^\s"\\)]*)', code)))
    code = code.replace("https://example.com/", base + "/")
    imported = re.findall(r'^\s*(?:@\w+\s+)*import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?(\w+)',
                          code, re.M)
    uses = [p for p in products if p in imported]
    os.makedirs(os.path.join(package, "Sources", name), exist_ok=True)
    with open(os.path.join(package, "Sources", name, "main.swift"), "w") as f:
        f.write(code)
    targets.append((name, uses))
    for path in paths if mode == "run" else []:
        file = os.path.join(site, path.lstrip("/").split("?")[0])
        os.makedirs(os.path.dirname(file), exist_ok=True)
        picture = Image.new("RGB", (64, 48), (70, 130, 220))
        ImageDraw.Draw(picture).ellipse((30, 6, 58, 34), fill=(250, 210, 80))
        ext = os.path.splitext(file)[1].lower()
        formats = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".webp": "WEBP", ".gif": "GIF"}
        if ext not in formats:
            sys.exit(f"{readme}:{line}: no test image for {path} (known: {', '.join(formats)})")
        picture.save(file, formats[ext])
    print(f"{name}\t{mode}\t{readme}\t{line}\t{' '.join(paths)}")

def dependency(product):
    return f'.product(name: "{product}", package: "WebImage")'
target_lines = ",\n".join(
    f'        .executableTarget(name: "{name}", dependencies: [{", ".join(dependency(p) for p in uses)}])'
    for name, uses in targets)
manifest = f'''// swift-tools-version:6.0
// Generated by scripts/readme-snippets.sh from {len(files)} Markdown file(s): one target per swift block.
import PackageDescription

let package = Package(
    name: "ReadmeSnippets",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "WebImage", path: "{root}")],
    targets: [
{target_lines}
    ],
    swiftLanguageModes: [.v6]
)
'''
with open(os.path.join(package, "Package.swift"), "w") as f:
    f.write(manifest)
PY

scratch=()
[ -n "${EXAMPLES_SCRATCH:-}" ] && scratch=(--scratch-path "$EXAMPLES_SCRATCH")
echo "readme-snippets: $(wc -l <"$work/plan.tsv") swift block(s) of ${#files[@]} file(s):"
while IFS=$'\t' read -r target mode file line paths; do
    echo "  ${file#"$root"/}:$line: $target ($mode)"
done <"$work/plan.tsv"

# One build for every block. Errors name Sources/SnippetN/main.swift:L; print them as Markdown lines too.
set +e
$swift build --package-path "$package" "${scratch[@]}" 2>&1 | tee "$work/build.log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
    while IFS=$'\t' read -r target mode file line paths; do
        grep -oE "Sources/$target/main\.swift:[0-9]+:[0-9]+: error: .*" "$work/build.log" | sort -u \
            | while IFS=: read -r _ l c rest; do
                echo "$file:$((line + l - 1)):$c:$rest"
            done
    done <"$work/plan.tsv" >&2
    fail "a swift block does not compile as written (above)"
fi
bin=$($swift build --package-path "$package" "${scratch[@]}" --show-bin-path)

ran=0
while IFS=$'\t' read -r target mode file line paths; do
    [ "$mode" = run ] || continue
    echo "==> $target (${file#"$root"/}:$line)"
    mkdir -p "$work/$target-cache"
    set +e
    XDG_CACHE_HOME="$work/$target-cache" timeout "${SNIPPET_TIMEOUT:-120}" "$bin/$target" </dev/null
    status=$?
    set -e
    [ "$status" -eq 0 ] || fail "the block at $file:$line exited with status $status"
    for path in $paths; do
        grep -qF "\"GET $path HTTP/1.1\" 200" "$work/server.log" \
            || fail "the block at $file:$line never loaded $path from the local server"
    done
    ran=$((ran + 1))
done <"$work/plan.tsv"
echo "readme-snippets: ok ($(grep -cv $'\tskip\t' "$work/plan.tsv") compiled, $ran ran)"
