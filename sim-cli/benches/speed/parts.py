#!/usr/bin/env python3
"""Instructions per request by part of the world, inlined code included.

A release build inlines most of the world into a few functions
(`run_with`, the parts' routers), so a profile by function says little
about which part costs what. This reads a callgrind profile taken with
`--dump-instr=yes`, asks `addr2line` for each instruction's chain of
inlined frames, and charges the instruction to the part whose source
file is the innermost project frame (an `Option` or slice method inlined
into the client counts as the client's). Instructions outside the
project's sources go by the function callgrind names (an older build's
heap crate, the random-number crates, libm's logarithm), the rest to start-up,
loading and writing.

    valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file=run.cg \
        target/release/stormsim run WORLD.yaml --quiet --out /tmp/a
    valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file=start.cg \
        target/release/stormsim run SHORT.yaml --quiet --out /tmp/b
    python3 sim-cli/benches/speed/parts.py target/release/stormsim run.cg \
        --minus start.cg --per 72000

`--minus` takes away a run too short to matter (the same world for one
second: start-up, loading and writing), `--per` divides by the
requests of the difference, `--lines N` lists under each part its N
heaviest source lines (where to look next; `file:?` is code the
compiler gave no line, mostly moves between an inlined call's frames). Needs valgrind and binutils' addr2line; the
binary needs line tables (`CARGO_PROFILE_RELEASE_DEBUG=line-tables-only`).
"""

import argparse
import collections
import functools
import os
import re
import subprocess
import sys

# Each part and the sources it owns, first match wins (innermost frame
# first). Paths are matched as substrings of addr2line's file names.
PARTS = [
    # The heap before the rest of `queue/` (and the crate that held it
    # before it, for profiles of older builds).
    ("engine: the heap", ["sim-core/src/queue/quad.rs", "/dary_heap-"]),
    ("engine: event loop, lanes, streams, slots", ["sim-core/src/sim.rs", "sim-core/src/queue/"]),
    ("records: slabs of requests, calls, attempts", ["sim-core/src/slab.rs", "sim-models/src/request.rs"]),
    ("figures: levels, histograms, counts", ["sim-core/src/metrics/", "sim-models/src/recorder.rs"]),
    ("routing: events, asks, the context", ["sim-models/src/world.rs", "sim-models/src/context.rs"]),
    (
        "client: attempts, pools, timeouts, policies",
        [
            "sim-models/src/client.rs",
            "sim-models/src/pool.rs",
            "sim-models/src/policy/",
            "sim-core/src/waitline.rs",
            "sim-core/src/deadlines.rs",
        ],
    ),
    ("service: pods, workers, steps, balancer", ["sim-models/src/pods.rs", "sim-models/src/calls.rs", "sim-models/src/lb.rs"]),
    ("load: arrivals, users, gateway", ["sim-models/src/load.rs"]),
    ("dependency: upstream, jobs", ["sim-models/src/dependency.rs", "sim-models/src/upstream.rs"]),
    ("draws: distributions, ChaCha", ["sim-core/src/dist.rs", "sim-core/src/rng.rs", "/rand_chacha-", "/rand-", "/rand_core-", "/rand_distr-", "/ppv-lite86-"]),
    ("time arithmetic", ["sim-core/src/time.rs"]),
]
OTHER = "start-up, loading, writing (the rest)"

NAMED = re.compile(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$")


def profile(path, binary):
    """(cost by address in `binary`'s object, cost by function name
    elsewhere, function by address)."""
    costs, elsewhere, fn_at = collections.Counter(), collections.Counter(), {}
    own = os.path.basename(binary)
    names = {"ob": {}, "fn": {}}
    ob = fn = None
    addr = 0
    after_call = False
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith("positions:") and "instr" not in line.split():
                sys.exit(f"{path}: no instruction addresses (run callgrind with --dump-instr=yes)")
            m = NAMED.match(line)
            if m:
                called, kind, key, name = m.groups()
                if name:
                    names[kind][key] = name
                if not called:
                    if kind == "ob":
                        ob = names["ob"].get(key)
                    else:
                        fn = names["fn"].get(key)
                continue
            if line.startswith("calls="):
                after_call = True  # the next cost line is the call's, inclusive
                continue
            if not line or not (line[0].isdigit() or line[0] in "+-*"):
                continue
            fields = line.split()
            if len(fields) < 3:
                continue
            tok = fields[0]
            if tok == "*":
                pass
            elif tok[0] in "+-":
                addr += int(tok, 0)
            else:
                addr = int(tok, 0)
            if after_call:
                after_call = False
                continue
            cost = int(fields[2])
            if ob and os.path.basename(ob) == own:
                costs[addr] += cost
                fn_at[addr] = fn
            else:
                elsewhere[fn] += cost
    return costs, elsewhere, fn_at


def frames(binary, addresses):
    """addr2line's inlined frames (innermost first) for each address."""
    out = subprocess.run(
        ["addr2line", "-a", "-i", "-f", "-C", "-e", binary],
        input="".join(f"{a:#x}\n" for a in addresses),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    result, current, i = {}, None, 0
    while i < len(out):
        if out[i].startswith("0x"):
            current = int(out[i], 16)
            result[current] = []
            i += 1
        else:
            result[current].append(out[i + 1] if i + 1 < len(out) else "")
            i += 2
    return result


def load_base(binary, fn_at):
    """Where the binary was loaded: the offset most functions' lowest
    profiled address has from their symbol's (0 when loaded at its link
    address)."""
    symbols = {}
    for line in subprocess.run(["nm", "-C", binary], capture_output=True, text=True, check=True).stdout.splitlines():
        fields = line.split(" ", 2)
        if len(fields) == 3 and fields[0]:
            symbols.setdefault(re.sub(r"::<.*>$", "", fields[2]), int(fields[0], 16))
    lowest = {}
    for addr, fn in fn_at.items():
        lowest[fn] = min(addr, lowest.get(fn, addr))
    votes = collections.Counter(a - symbols[f] for f, a in lowest.items() if f in symbols)
    # The profiled binary's functions all sit at one offset from their
    # symbols; a rebuilt binary's scatter (a fifth agree, not nearly all).
    base, agree = votes.most_common(1)[0] if votes else (0, 0)
    if agree < 0.5 * sum(votes.values()) or not votes:
        sys.exit(f"{binary}: its symbols do not match the profile's functions; was it rebuilt after the profile was taken?")
    return base


@functools.cache
def part_of_file(path):
    """The part that owns source file `path`, if any (cached: a
    profile's addresses share a few hundred files)."""
    return next((name for name, keys in PARTS if any(k in path for k in keys)), None)


def source_line(loc):
    """`file:line` of an addr2line location, the file from the project's
    root (`sim-models/src/world.rs:570`), its discriminator dropped."""
    loc = loc.split(" ")[0]
    m = re.search(r"(sim-(?:core|models|cli)/.*)$", loc)
    return m.group(1) if m else loc


def by_part(profiled, base, files):
    """A profile's instructions by part, and by part and source line,
    given each address's frames."""
    costs, elsewhere, fn_at = profiled
    parts, lines = collections.Counter(), collections.Counter()
    for addr, cost in costs.items():
        part = None
        for loc in files.get(addr - base, []):
            part = part_of_file(loc.rsplit(":", 1)[0])
            if part:
                lines[(part, source_line(loc))] += cost
                break
        if part is None:
            name = fn_at.get(addr) or ""
            if "dary_heap" in name:
                part = "engine: the heap"
            elif "rand_chacha" in name or name.startswith("rand"):
                part = "draws: distributions, ChaCha"
            else:
                part = OTHER
        parts[part] += cost
    for name, cost in elsewhere.items():
        is_log = name and ("ieee754_log" in name or name in ("log", "__log"))
        parts["draws: distributions, ChaCha" if is_log else OTHER] += cost
    return parts, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("profile", help="callgrind output of the run, with --dump-instr=yes")
    ap.add_argument("--minus", help="callgrind output of a run to take away (start-up, loading, writing)")
    ap.add_argument("--per", type=float, default=1.0, help="divide by this (the requests run)")
    ap.add_argument(
        "--lines",
        type=int,
        default=0,
        metavar="N",
        help="also list each part's N heaviest source lines (the line in the part's own sources)",
    )
    args = ap.parse_args()
    profiles = [profile(p, args.binary) for p in [args.profile] + ([args.minus] if args.minus else [])]
    base = load_base(args.binary, profiles[0][2])
    addresses = sorted({a - base for costs, _, _ in profiles for a in costs})
    files = frames(args.binary, addresses)
    parts, lines = by_part(profiles[0], base, files)
    if args.minus:
        less, less_lines = by_part(profiles[1], base, files)
        parts.subtract(less)
        lines.subtract(less_lines)
    total = sum(parts.values())
    print(f"{total / args.per:10.0f}  100.0 %  total")
    for name, cost in sorted(parts.items(), key=lambda kv: -kv[1]):
        print(f"{cost / args.per:10.0f}  {100 * cost / total:5.1f} %  {name}")
        if args.lines:
            own = sorted(((c, line) for (part, line), c in lines.items() if part == name), reverse=True)
            for c, line in own[: args.lines]:
                print(f"{'':10}  {c / args.per:8.1f}  {line}")


if __name__ == "__main__":
    main()
