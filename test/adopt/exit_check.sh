#!/bin/sh
# The preload's exit check (preload/process/exit_check.c): a process that loaded an NCCL whose calls never
# reached the preload says so in exactly one WARN line at the default level, naming the cause and
# prophet-doctor; a process whose calls were seen, or that loaded NCCL and never used it, says
# nothing; PROPHET_DEBUG=NONE and PROPHET_DISABLE=1 silence it as every other line.
#   dlopen      libnccl dlopen()ed RTLD_LOCAL, called through dlsym() on its handle
#   deepbind    a library that links libnccl, dlopen()ed with RTLD_DEEPBIND
#   exported    NCCL linked statically into the executable (exported)
#   quiet       linked / local (intercepted), unused / unused-now (loaded, never called), no NCCL,
#               the emulated job (prophet-emu's parent maps libnccl and never calls it)
# usage: exit_check.sh BUILD FIXTURES
set -u
build=$1 fix=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export LD_LIBRARY_PATH="$build/lib/emu"
pre=$build/lib/libprophet.so
line="^prophet: [^ ]+:[0-9]+ WARN \[exit_check.c:[0-9]+\] NCCL was loaded but none of its calls reached the preload"
fail() { echo "FAIL: $*"; echo "---- output"; cat "$tmp/out"; exit 1; }
run() { # NAME COMMAND...: runs it under the preload at the default level, output in $tmp/out
    name=$1; shift
    env LD_PRELOAD="$pre" "$@" >"$tmp/out" 2>&1 || fail "$name: the fixture failed"
    n=$(grep -Ec "$line" "$tmp/out")
}
warns() { # NAME CAUSE-REGEX COMMAND...
    name=$1 cause=$2; shift 2
    run "$name" "$@"
    [ "$n" -eq 1 ] || fail "$name: $n exit-check lines, expected exactly 1"
    grep -E "$line" "$tmp/out" | grep -Eq "\($cause\); likely NCCL is linked statically into another library, loaded with RTLD_DEEPBIND or called through dlsym\(\), or a different libnccl than the one interposed; run prophet-doctor -- COMMAND" ||
        fail "$name: the line does not give '$cause', the likely reasons and prophet-doctor"
    [ "$(grep -c . "$tmp/out")" -eq 2 ] || fail "$name: other lines than the fixture's and the exit check's"
    echo "$name: $(grep -Eo '\(.*\); likely' "$tmp/out")"
}
quiet() { # NAME COMMAND...
    name=$1; shift
    run "$name" "$@"
    [ "$n" -eq 0 ] || fail "$name: an exit-check line where NCCL's calls were seen or none was made"
    grep -q "^prophet: .*WARN" "$tmp/out" && fail "$name: a WARN line"
    echo "$name: quiet"
}

warns dlopen ".*/libnccl.so.2 is loaded and nothing links against it: calls through dlsym\(\) on its handle" \
    "$fix/doctor_fixture_dlopen"
warns deepbind ".*/libfixture_nccl_user.so binds p?nccl[A-Za-z]+ to .*/libnccl.so.2, past the preload" \
    "$fix/exit_fixture" deepbind
warns exported "NCCL is linked into .*/exit_fixture_exported" "$fix/exit_fixture_exported"

quiet linked "$fix/doctor_fixture_linked"
quiet local "$fix/exit_fixture" local
quiet unused "$fix/exit_fixture" unused
quiet unused-now "$fix/exit_fixture" unused-now
quiet no-nccl "$fix/doctor_fixture_none"
quiet emulated-job "$build/bin/prophet-emu" --timeout 60 --quiet --ranks 2 \
    --profile "$(dirname "$0")/../../profiles/resnet50.json" --mode ddp --iters 10 --scale 0.05 \
    --elements-scale 0.01
quiet emu-help "$build/bin/prophet-emu" --help

# the level and the off switch, as for every other line
quiet debug-none env PROPHET_DEBUG=NONE "$fix/doctor_fixture_dlopen"
quiet disabled env PROPHET_DISABLE=1 "$fix/doctor_fixture_dlopen"
# INFO keeps it (WARN and above)
run debug-info env PROPHET_DEBUG=INFO "$fix/doctor_fixture_dlopen"
[ "$n" -eq 1 ] || fail "debug-info: $n exit-check lines at PROPHET_DEBUG=INFO, expected 1"
echo "debug-info: 1 line"
echo "PASS"
