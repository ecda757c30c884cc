#!/usr/bin/env bash
# make docs: the DocC reference of every product (swift-docc-plugin, combined mode) and a copy of it for static
# hosting that a browser can read from a local HTTP server. Fails on any DocC warning — in a catalog page or in a
# `///` comment alike (a broken link, an unknown symbol, a topic that does not resolve) — and when a product's
# landing page does not start with a swift snippet or states another version than CHANGELOG.md's latest release.
#
# Output: .build/docs/WebImage.doccarchive (the combined archive; one per product under .build/docs/archives/) and
# .build/docs-site/ (static hosting): `make docs-serve`, then http://127.0.0.1:8000/documentation/
# The landing pages' snippets themselves compile and run with the README's (scripts/readme-snippets.sh).
#
# Usage: scripts/docs.sh [TARGET...]   (default: the target of every library product of Package.swift, each of
#        which must have a catalog with a landing page)
set -euo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
unset WEBIMAGE_TARGETS WEBIMAGE_CODERS_ONLY
fail() { echo "make docs: FAIL: $*" >&2; exit 1; }
if [ "$#" -eq 0 ]; then
    # shellcheck disable=SC2046  # one target per word
    set -- $($swift package dump-package | python3 -c '
import json, sys
package = json.load(sys.stdin)
print(" ".join(t for p in package["products"] if "library" in p["type"] for t in p["targets"]))')
fi

# 1. Landing pages: one per product, its Overview opening with a swift block, its version the changelog's.
version=$(sed -n -E 's/^## \[([0-9]+\.[0-9]+\.[0-9]+[^]]*)\].*/\1/p' CHANGELOG.md | head -1)
[ -n "$version" ] || fail "CHANGELOG.md names no released version (## [x.y.z] - date)"
grep -qF "Version **$version**" README.md || fail "README.md does not state version $version (CHANGELOG.md's latest)"
for target in "$@"; do
    # The catalog sits in the target's folder, wherever Package.swift puts it (Plugins/ImageService/Query …).
    page=$(find Sources Plugins -path "*/$target.docc/$target.md" | head -1)
    [ -n "$page" ] || fail "$target has no landing page <target folder>/$target.docc/$target.md"
    # (A snippet-mode comment, <!-- snippet: compile-only … -->, may stand on the line before the block.)
    awk '/^## Overview/ { getline; while ($0 == "" || $0 ~ /^<!--/) getline; exit ($0 ~ /^```swift/) ? 0 : 1 }' "$page" \
        || fail "$page: the Overview does not start with a \`\`\`swift snippet"
    grep -qF "version $version;" "$page" || fail "$page does not state version $version (CHANGELOG.md's latest)"
done

# 2. The reference, as swift-docc-plugin's combined mode makes it, but with one symbol-graph extraction for the
#    whole package: the plugin builds and extracts once per target (each a SwiftPM build plan), which took 7 of its
#    11 minutes here. `dump-symbol-graph` reuses the debug build; then each target's catalog is converted against
#    the archives of the documented targets it depends on (so ``/ImageCore/X`` resolves), and all are merged.
#    --ide-console-output makes DocC print one "path:line:col: warning: …" line per diagnostic.
mkdir -p .build
out=.build/docs
log=.build/docs.log
rm -rf "$out" && mkdir -p "$out/symbols" "$out/archives"
: >"$log"
# It also tries the test modules, which `swift build` did not build, and says so; only the documented targets'
# graphs are needed, and each is checked below.
echo "docs: symbol graphs (swift package dump-symbol-graph, reusing the debug build)"
$swift package dump-symbol-graph --emit-extension-block-symbols >>"$log" 2>&1 || true
graphs=$(sed -n 's/^Files written to //p' "$log" | tail -1)
[ -d "$graphs" ] || fail "swift package dump-symbol-graph wrote no symbol graphs (see $log)"
# The documented targets in dependency order, each with the documented targets it depends on (transitively).
plan=$($swift package dump-package | python3 -c '
import json, sys
package = json.load(sys.stdin)
documented = sys.argv[1:]
deps = {}
for target in package["targets"]:
    names = []
    for dependency in target.get("dependencies", []):
        for kind in ("byName", "target"):
            if kind in dependency:
                names.append(dependency[kind][0])
    deps[target["name"]] = names
def closure(name, seen):
    for dependency in deps.get(name, []):
        if dependency not in seen:
            seen.add(dependency)
            closure(dependency, seen)
    return seen
order, done = [], set()
def visit(name):
    if name in done:
        return
    done.add(name)
    for dependency in sorted(closure(name, set())):
        if dependency in documented:
            visit(dependency)
    order.append(name)
for name in documented:
    visit(name)
for name in order:
    print(name, *sorted(d for d in closure(name, set()) if d in documented))
' "$@")
docc=$(command -v docc || echo "$(dirname "$(readlink -f "$(command -v "$swift")")")/docc")
while read -r target dependencies; do
    catalog=$(dirname "$(find Sources Plugins -path "*/$target.docc/$target.md" | head -1)")
    mkdir -p "$out/symbols/$target"
    cp "$graphs/$target".symbols.json "$out/symbols/$target/" || fail "no symbol graph for $target (see $log)"
    cp "$graphs/$target"@*.symbols.json "$out/symbols/$target/" 2>/dev/null || true
    links=()
    for dependency in $dependencies; do links+=(--dependency "$out/archives/$dependency.doccarchive"); done
    echo "docs: $target${dependencies:+ (links to $dependencies)}"
    "$docc" convert "$catalog" --additional-symbol-graph-dir "$out/symbols/$target" \
        --output-path "$out/archives/$target.doccarchive" --fallback-display-name "$target" \
        --fallback-bundle-identifier "$target" --enable-experimental-external-link-support "${links[@]}" \
        --ide-console-output >>"$log" 2>&1 || fail "docc convert failed for $target (see $log)"
done <<<"$plan"
archives=()
while read -r target _; do archives+=("$out/archives/$target.doccarchive"); done <<<"$plan"
"$docc" merge "${archives[@]}" --output-path "$out/WebImage.doccarchive" --synthesized-landing-page-name WebImage \
    --synthesized-landing-page-kind Package >>"$log" 2>&1 || fail "docc merge failed (see $log)"
# Every warning fails, in catalog pages and /// comments alike — but a listed few in code another change is
# rewriting (scripts/docs-known-warnings.txt: "path: message", without line numbers; the list may only shrink).
python3 - "$log" scripts/docs-known-warnings.txt "$PWD/" <<'PY' || fail "DocC warns (above): fix the link or symbol in the page or /// comment named"
import re, sys
log, known_file, root = sys.argv[1:]
known = {line.strip() for line in open(known_file) if line.strip() and not line.startswith("#")}
seen, unexpected, allowed = set(), [], set()
for line in open(log, errors="replace"):
    line = line.rstrip("\n").replace(root, "")
    # SwiftPM's note that a dependency's manifest leaves files unhandled is not ours to fix.
    if not re.search(r"(^|: )warning: ", line) or line in seen or "which are unhandled" in line:
        continue
    seen.add(line)
    key = re.sub(r":\d+:\d+: warning: ", ": ", line, count=1)
    if key in known:
        allowed.add(key)
    else:
        unexpected.append(line)
for line in unexpected:
    print(line, file=sys.stderr)
for key in sorted(known - allowed):
    print(f"make docs: {known_file} lists a warning DocC no longer gives; remove it: {key}", file=sys.stderr)
print(f"make docs: {len(unexpected)} warning(s), {len(allowed)} known one(s) let through", file=sys.stderr)
sys.exit(1 if unexpected or known - allowed else 0)
PY
archive=$out/WebImage.doccarchive
[ -d "$archive" ] || fail "no combined archive at $archive"

# 3. A copy for static hosting (DocC's web app reads JSON with fetch(), so it needs an HTTP server, not file://).
rm -rf .build/docs-site
"$docc" process-archive transform-for-static-hosting "$archive" --output-path .build/docs-site >/dev/null
[ -f .build/docs-site/index.html ] || fail "no index.html in .build/docs-site"
echo "make docs: ok — $# products, no new warning; $out/WebImage.doccarchive, and .build/docs-site/ to browse:"
echo "           make docs-serve, then http://127.0.0.1:8000/documentation/"
