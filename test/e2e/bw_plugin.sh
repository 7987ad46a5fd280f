#!/bin/sh
# The preload and its eBPF plugin agree on an interface version (include/prophet/bw_plugin.h):
# a copy of libprophet.so with PLUGIN beside it as libprophet_bw.so runs a 2-rank job, which must
# finish with exact results (prophet-emu checks them), and
#   v1       the plugin is used: each rank says "eBPF throughput from fixture-v1", no WARN
#   unknown  a plugin with no version the preload knows: one WARN per rank naming the versions it
#            looks for, the probe is off and the bandwidth fitted (the INFO line says why)
#   none     no plugin beside it (PLUGIN -: so no libbpf.so.1 either, I5): one INFO line says
#            why, the bandwidth is fitted
# usage: bw_plugin.sh BUILD PROFILE PLUGIN|- v1|unknown|none
set -u
build=$1 prof=$2 plugin=$3 want=$4
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cp "$build/lib/libprophet.so" "$dir/"
[ "$plugin" = - ] || cp "$plugin" "$dir/libprophet_bw.so"
out=$dir/out
env LD_LIBRARY_PATH="$build/lib/emu" LD_PRELOAD="$dir/libprophet.so" PROPHET_DEBUG=INFO \
    "$build/bin/prophet-emu" --ranks 2 --profile "$prof" --mode ddp --iters 12 --scale 0.05 \
    --elements-scale 0.01 --quiet >"$out" 2>&1
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: prophet-emu exited $rc"; tail -20 "$out"; exit 1; }
fail() { echo "FAIL: $1"; grep 'prophet: .*\(WARN\|eBPF\)' "$out" | head; exit 1; }
warn='prophet: .*WARN .*eBPF plugin .*libprophet_bw.so not used: it exports no plugin interface version this libprophet.so knows (prophet_bw_plugin_v1); eBPF throughput off'
case $want in
v1)
    n=$(grep -c 'prophet: .*INFO eBPF throughput from fixture-v1$' "$out")
    [ "$n" -eq 2 ] || fail "$n ranks used the plugin, want 2"
    ! grep -q 'prophet: .*WARN .*eBPF' "$out" || fail "a WARN about the plugin"
    ;;
unknown)
    n=$(grep -c "$warn" "$out")
    [ "$n" -eq 2 ] || fail "$n WARN lines about the plugin's version, want one per rank (2)"
    grep -q 'prophet: .*INFO no eBPF throughput (.*libprophet_bw.so: it exports no plugin interface version .*); using bandwidth fitted' "$out" ||
        fail "no fallback line"
    ;;
none)
    grep -q "prophet: .*INFO no eBPF throughput (no eBPF support: .*libprophet_bw.so.*); using bandwidth fitted" "$out" ||
        fail "no fallback line"
    ;;
*) echo "usage: bw_plugin.sh BUILD PROFILE PLUGIN|- v1|unknown|none"; exit 2 ;;
esac
grep -m1 'prophet: .*\(eBPF plugin\|eBPF throughput from\|no eBPF throughput\)' "$out"
echo PASS
