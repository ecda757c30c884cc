#!/usr/bin/env bash
# make api-check: the public API of every library product compared with the baseline revision named in
# .api-baseline (`swift package diagnose-api-breaking-changes`, the toolchain's swift-api-digester). Fails when the
# digester reports a break that CHANGELOG.md does not list under Unreleased → Breaking, or when it cannot compare.
#
# The rule (CONTRIBUTING.md, "API changes and the changelog"): each break names a declaration ("func
# ImageManager.cacheKey(for:context:) has been removed"); its name without the argument list (`ImageManager.cacheKey`;
# an initializer `PixelBuffer.init`, also accepted as `PixelBuffer(`; an accessor its property, `PixelBuffer.bytes`)
# must appear as a whole name in an entry under "### Breaking" of "## [Unreleased]".
#
# Cost: the digester compares against one JSON file per module of the baseline (api-baseline/<commit>/, committed),
# so a run builds only the current package (nothing when `swift build` has just run: CI reuses its debug build)
# and then reads each module's API, about 1–2 minutes on 2 cores. Without the files for the named commit, SwiftPM
# checks the baseline out under .build and builds the whole package there (a cold build, 10+ minutes); run
# `make api-baseline` once after moving the baseline and commit what it writes.
#
# Usage: scripts/api-check.sh             compare (the files of the baseline must exist, else they are made first)
#        scripts/api-check.sh --baseline  (re)write api-baseline/<commit>/ for .api-baseline's revision
set -euo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
# The package as users see it: these switches of Package.swift drop targets.
unset WEBIMAGE_TARGETS WEBIMAGE_CODERS_ONLY
fail() { echo "api-check: FAIL: $*" >&2; exit 1; }

revision=$(sed -e 's/#.*//' .api-baseline | tr -d '[:space:]')
[ -n "$revision" ] || fail ".api-baseline names no revision"
commit=$(git rev-parse --verify --quiet "$revision^{commit}") \
    || fail "the baseline revision '$revision' of .api-baseline is not in this clone (a shallow clone? fetch it)"
dumps=api-baseline

# Library products of the package, each with its Swift targets.
products=$($swift package dump-package | python3 -c '
import json, sys
package = json.load(sys.stdin)
swift_targets = {t["name"] for t in package["targets"] if t["type"] == "regular"}
for product in package["products"]:
    if "library" in product["type"]:
        print(product["name"], *[t for t in product["targets"] if t in swift_targets])
')

mkdir -p .build
log=.build/api-check.log
if [ "${1:-}" = "--baseline" ]; then
    echo "api-check: writing $dumps/$commit/ (the baseline is checked out and built under .build: a cold build)"
    rm -rf "${dumps:?}"/*/
    names=$(cut -d' ' -f1 <<<"$products" | xargs)
    # shellcheck disable=SC2086  # one argument per product
    set +e
    $swift package diagnose-api-breaking-changes "$commit" --baseline-dir "$PWD/$dumps" --regenerate-baseline \
        --products $names 2>&1 | tee "$log"
    set -e
    ls "$dumps/$commit"/*.json >/dev/null 2>&1 || fail "no baseline written"
    echo "api-check: wrote $(ls "$dumps/$commit" | wc -l) module file(s) to $dumps/$commit/; commit them"
    exit 0
fi

# Compare only products whose every module has a baseline file: a product new since the baseline has nothing to
# break, and asking for it would make SwiftPM build the baseline to find out.
compare=() new=()
while read -r product modules; do
    have=1
    for module in $modules; do [ -f "$dumps/$commit/$module.json" ] || have=0; done
    if [ "$have" = 1 ]; then compare+=("$product"); else new+=("$product"); fi
done <<<"$products"
if [ "${#compare[@]}" -eq 0 ]; then
    echo "api-check: no baseline files in $dumps/$commit/: SwiftPM builds the baseline (slow); then commit them"
    read -r -a compare <<<"$(cut -d' ' -f1 <<<"$products" | xargs)"
    new=()
fi
[ "${#new[@]}" -eq 0 ] || echo "api-check: new since the baseline, not compared: ${new[*]}"
baseline=${commit:0:12}
[ "$revision" = "$commit" ] || baseline="$revision ($baseline)"
echo "api-check: ${#compare[@]} product(s) against $baseline: ${compare[*]}"

set +e
$swift package diagnose-api-breaking-changes "$commit" --baseline-dir "$PWD/$dumps" --products "${compare[@]}" \
    >"$log" 2>&1
status=$?
set -e

# A module of the baseline that no library product of the package has any more is a break the digester can't
# report (it compares only what exists): it counts as "module <name> has been removed".
current=" $(cut -d' ' -f2- <<<"$products" | xargs) "
removed=()
for file in "$dumps/$commit"/*.json; do
    [ -f "$file" ] || continue
    module=$(basename "$file" .json)
    [[ "$current" == *" $module "* ]] || removed+=("$module")
done

python3 - "$log" "$status" CHANGELOG.md "${removed[@]}" <<'PY'
import re, sys

log, status, changelog, removed = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
output = open(log, encoding="utf-8", errors="replace").read()
breaks = [line.split("💔", 1)[1].strip() for line in output.splitlines() if "💔" in line]
breaks += [f"API breakage: module {module} has been removed (no library product has it)" for module in removed]
errors = [line for line in output.splitlines() if re.match(r"^(error:|.*: error:)", line)]
modules = set(re.findall(r"(?:No breaking changes|breaking changes?) detected in (\w+)", output))

def fail(message):
    print(output[-6000:])
    sys.exit(f"api-check: FAIL: {message}")

if errors:
    fail("the comparison did not run: " + "; ".join(errors[:5]))
if status != 0 and not breaks:
    fail(f"swift package diagnose-api-breaking-changes exited with {status} without naming a break")
if not modules:
    fail("the digester reported on no module")

text = open(changelog, encoding="utf-8").read()
unreleased = re.search(r"^## \[Unreleased\][^\n]*\n(.*?)(?=^## |\Z)", text, re.M | re.S)
if not unreleased:
    fail(f"{changelog} has no '## [Unreleased]' section")
breaking = re.search(r"^### Breaking[^\n]*\n(.*?)(?=^### |\Z)", unreleased.group(1), re.M | re.S)
listed = re.sub(r"<!--.*?-->", "", breaking.group(1), flags=re.S) if breaking else ""

KINDS = r"(?:func|var|let|constructor|accessor|subscript|enumelement|struct|class|enum|protocol|typealias|" \
        r"associatedtype|macro|operator|import|extension|module)"

def names(message):
    """The declaration a digester message is about, as the changelog may spell it."""
    m = re.match(r"API breakage:\s+(?:static\s+)?(" + KINDS + r")\s+(\S+)", message)
    if not m:
        return None
    kind, name = m.group(1), re.split(r"[(<]", m.group(2), maxsplit=1)[0].rstrip(".")
    if kind == "accessor":  # ImageContext.thumbnail.Get() → the property
        name = re.sub(r"\.(Get|Set|Modify|Read|_modify|_read|WillSet|DidSet|Address|MutableAddress|Init)$", "", name)
    if name.endswith(".init"):
        return [name, name[: -len(".init")] + "("]
    return [name]

def listed_name(name):
    if name.endswith("("):
        return re.search(r"(?<![\w])" + re.escape(name), listed) is not None
    return re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", listed) is not None

unlisted = []
for message in breaks:
    candidates = names(message)
    if candidates is None or not any(listed_name(n) for n in candidates):
        unlisted.append((message, candidates))

print(f"api-check: {len(breaks)} break(s) reported for {len(modules)} module(s); "
      f"{len(breaks) - len(unlisted)} listed under Unreleased → Breaking")
for message in breaks:
    print(f"  {message}")
if unlisted:
    print("\napi-check: FAIL: breaks not listed under '### Breaking' of '## [Unreleased]' in CHANGELOG.md:",
          file=sys.stderr)
    for message, candidates in unlisted:
        want = " or ".join(f"`{n}`" for n in candidates) if candidates else "(no declaration name found)"
        print(f"  {message}\n      → name {want} in a Breaking entry, with its migration", file=sys.stderr)
    sys.exit(1)
print("api-check: ok")
PY
