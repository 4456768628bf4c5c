#!/usr/bin/env bash
# Builds stormsim with profile-guided optimisation, for long sweeps and
# long worlds: about 0.9x the CPU of the plain release build, the same
# output byte for byte (sim-cli/benches/README.md, "A build trained on
# its own worlds").
#
#   sim-cli/build-pgo.sh            # prints the binary's path when done
#
# Three steps, each in its own target directory under $CARGO_TARGET_DIR
# (default: target), so the plain builds are left as they are:
#   1. an instrumented release build (pgo-gen) that counts, as it runs,
#      how often each branch and call is taken;
#   2. that build runs what sim-cli/pgo-training.txt lists (the bench
#      worlds, a spread of the bundled experiments so that the features
#      they use are not laid out as cold code, the README's main job);
#      the counts are merged with llvm-profdata (rustup's llvm-tools,
#      installed here when missing);
#   3. the release build again (pgo) with those counts: the compiler lays
#      out the hot paths together and inlines where the calls are.
# Last, the trained build and the instrumented one each run the storm
# with its attempts table, and their datasets must be the same bytes:
# the optimisation changes how fast, never what.
#
# Two clean release builds: about 13 minutes on 2 cores. The counts
# follow the source: rebuild after changing it.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
# RUSTFLAGS is split at spaces: a path holding one would be cut in two.
case "$target" in *" "*)
  echo "error: the target directory '$target' holds a space, which RUSTFLAGS cannot carry; set CARGO_TARGET_DIR to a path without one" >&2
  exit 2
  ;;
esac
gen="$target/pgo-gen"
use="$target/pgo"
counts="$target/pgo-counts"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

step() { printf '\n=== %s\n' "$*"; }

step "llvm-profdata (rustup component llvm-tools)"
host="$(rustc -vV | sed -n 's/^host: //p')"
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  if ! command -v rustup > /dev/null; then
    echo "error: $profdata not found, and no rustup to install llvm-tools with" >&2
    exit 1
  fi
  rustup component add llvm-tools
fi
"$profdata" --version | head -n 2

step "1. instrumented build ($gen)"
rm -rf "$counts"
mkdir -p "$counts"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$counts" \
  cargo build --release --locked -p sim-cli --target-dir "$gen"

step "2. training runs"
trainee="$gen/release/stormsim"
n=0
while read -r command file; do
  case "$command" in "" | "#"*) continue ;; esac
  n=$((n + 1))
  echo "stormsim $command $file"
  "$trainee" "$command" "$file" --quiet --out "$scratch/train-$n" < /dev/null > /dev/null
  rm -rf "$scratch/train-$n"
done < sim-cli/pgo-training.txt
"$profdata" merge -o "$scratch/stormsim.profdata" "$counts"
mkdir -p "$use"
mv "$scratch/stormsim.profdata" "$use/stormsim.profdata"

step "3. trained build ($use)"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$use/stormsim.profdata" \
  cargo build --release --locked -p sim-cli --target-dir "$use"

step "the same bytes from both builds"
check=sim-cli/benches/worlds/storm-10k-attempts.yaml
"$trainee" run "$check" --quiet --out "$scratch/instrumented" > /dev/null
"$use/release/stormsim" run "$check" --quiet --out "$scratch/trained" > /dev/null
diff -r "$scratch/instrumented" "$scratch/trained"
rm -rf "$counts"
echo "$check: identical datasets"

echo
echo "built $use/release/stormsim"
echo "measure it: STORMSIM_BIN=$use/release/stormsim cargo bench -p sim-cli --bench speed"
