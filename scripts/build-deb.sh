#!/usr/bin/env bash
#
# build-deb.sh: build the Debian package of the committed HEAD (debian/) with
# dpkg-buildpackage in a temporary clone, so the work tree, its build/ dirs
# and any uncommitted change stay out of it; prints the .deb's path (in
# OUT_DIR, default ./build-deb, which git ignores). Needs the build
# dependencies in debian/control (scripts/install-deps.sh has them),
# debhelper and dpkg-dev.
#
#   ./scripts/build-deb.sh [OUT_DIR]
set -euo pipefail

cd "$(dirname "$0")/.."
source_dir=$(pwd)
out_dir=$(realpath -m "${1:-build-deb}")
for tool in dpkg-buildpackage dh git; do
    command -v "$tool" >/dev/null ||
        { echo "build-deb: $tool is missing (apt-get install dpkg-dev debhelper git)" >&2; exit 1; }
done
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "build-deb: note: uncommitted changes are not in the package (it builds HEAD)" >&2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A clone, not a copy: the package's --version names the commit it was built from.
git clone --quiet --no-checkout "$source_dir" "$work/tessera"
git -C "$work/tessera" checkout --quiet "$(git rev-parse HEAD)"
(cd "$work/tessera" && dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1 || {
    tail -40 "$work/build.log" >&2
    echo "build-deb: dpkg-buildpackage failed (log above)" >&2
    exit 1
}
mkdir -p "$out_dir"
debs=()
for deb in "$work"/*.deb; do
    cp "$deb" "$out_dir/"
    debs+=("$out_dir/$(basename "$deb")")
done
if command -v lintian >/dev/null; then
    lintian "$work"/*.changes >&2 || echo "build-deb: lintian found problems (above)" >&2
fi
printf '%s\n' "${debs[@]}"
