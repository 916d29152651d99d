#!/usr/bin/env bash
# Keeps the package from rotting: installs the build into a temporary prefix, configures and
# builds examples/embed out of tree against that prefix alone (find_package(lagpilot)), runs it
# against an embedded broker with a few thousand messages and checks that every message was
# handled; also checks the installed binary's version against the package's.
#
# Usage: install_and_embed.sh BUILD_DIR SOURCE_DIR [MESSAGES]
set -euo pipefail
build=$1
source=$2
messages=${3:-3000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

step() { echo "== $*"; }
step "cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in include/lagpilot/lagpilot.h include/lagpilot/version.h lib/cmake/lagpilot/lagpilotConfig.cmake \
         lib/liblagpilot_policies.a lib/liblagpilot_controller.a bin/lagpilot bin/lagpilot-live; do
  [[ -e $prefix/$f ]] || { echo "missing from the install: $f"; exit 1; }
done

gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
step "cmake -S $source/examples/embed -B $work/embed -DCMAKE_PREFIX_PATH=$prefix"
# Only the prefix: the example must not find anything in the source or build tree.
cmake -S "$source/examples/embed" -B "$work/embed" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >"$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
step "cmake --build $work/embed"
cmake --build "$work/embed" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
if grep -q -- "-I$source" "$work/embed/compile_commands.json" 2>/dev/null; then
  echo "the example was compiled against the source tree"; exit 1
fi

step "$work/embed/embed_example --messages $messages"
"$work/embed/embed_example" --messages "$messages" --timeout 90 >"$work/run.out" 2>"$work/run.err" ||
  { echo "embed_example failed:"; tail -20 "$work/run.out" "$work/run.err"; exit 1; }
tail -1 "$work/run.out"
grep -q "($messages of $messages distinct)" "$work/run.out" ||
  { echo "not every message was handled"; tail -5 "$work/run.out"; exit 1; }

step "$prefix/bin/lagpilot --version"
version=$("$prefix/bin/lagpilot" --version)
package_version=$(sed -n 's/^set(PACKAGE_VERSION "\([^"]*\)")$/\1/p' "$prefix/lib/cmake/lagpilot/lagpilotConfigVersion.cmake")
echo "$version (package $package_version)"
[[ $version == "lagpilot $package_version" ]] || { echo "version mismatch"; exit 1; }
# A live command goes from the installed lagpilot to the installed lagpilot-live beside it.
step "$prefix/bin/lagpilot run --help"
"$prefix/bin/lagpilot" run --help | grep -q -- "--print-config" ||
  { echo "lagpilot run --help did not reach lagpilot-live"; exit 1; }
echo "ok"
