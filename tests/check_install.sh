#!/usr/bin/env bash
# Installs the build into a staging directory and checks that clfuse.pc is
# all a user needs: a program compiled and linked with nothing but
# `pkg-config --cflags --libs clfuse` builds, runs and sees this version.
# Usage: check_install.sh BUILD_DIR LIBDIR VERSION CC [CC ARGS...]
# (LIBDIR absolute, as installed; SANITIZE: meson's b_sanitize value.)
set -euo pipefail

build=$1 libdir=$2 version=$3
shift 3
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

meson install -C "$build" --no-rebuild --quiet --destdir "$stage" >/dev/null

# The installed clfuse.pc with only its prefix moved into the staging
# directory (PKG_CONFIG_SYSROOT_DIR would also move the system OpenCL.pc).
mkdir "$stage/pc"
sed 's|^prefix=|prefix='"$stage"'|' "$stage$libdir/pkgconfig/clfuse.pc" > "$stage/pc/clfuse.pc"
# A sysroot the environment sets (the GPU machine's .gpu/env.sh) would
# move the staged prefix as well: none for this query.
export PKG_CONFIG_PATH="$stage/pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pc_flags=$(PKG_CONFIG_SYSROOT_DIR='' pkg-config --cflags --libs clfuse)

# A sanitized library needs a sanitized program: the ASan runtime must load
# first.
san=()
if [[ -n ${SANITIZE:-} && ${SANITIZE} != none ]]; then
  san=("-fsanitize=$SANITIZE")
fi

cat > "$stage/use_clfuse.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <clfuse/clfuse.h>

int main(int argc, char **argv) {
    clf_graph *g = clf_graph_create();
    int ok = g != NULL && argc == 2 && strcmp(clf_version(), argv[1]) == 0 &&
             strcmp(clf_status_name(CLF_OK), "CLF_OK") == 0;
    clf_graph_destroy(&g);
    printf("clf_version() = %s\n", clf_version());
    return ok ? 0 : 1;
}
C

# shellcheck disable=SC2086  # pkg-config output is a list of flags
"$@" -std=c11 -pedantic -Wall -Wextra -Werror "${san[@]}" "$stage/use_clfuse.c" \
  -o "$stage/use_clfuse" $pc_flags -Wl,-rpath,"$stage$libdir"
"$stage/use_clfuse" "$version"
echo "pkg-config --cflags --libs clfuse: $pc_flags"
