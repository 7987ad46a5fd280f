#!/bin/sh
# Runs prophet-emu under libprophet.so and checks its outcome and the preload's stderr.
# usage: run_emu.sh BUILD EXPECT CHECK PLAN [VAR=VALUE ...] -- PROPHET-EMU-ARGS...
#   EXPECT  ok     prophet-emu exits 0 (every element of every iteration exact)
#           wrong  prophet-emu exits 1 and reports a wrong result (a contract test)
#           error  prophet-emu exits 1: a rank's ncclAllReduce returned an error, no collective
#                  mismatch, no timeout (a failure reported to the job instead of a divergence)
#   CHECK   none | multi (every rank's summary line has blocks>1=N with N > 0)
#           | multi-trace (a TRACE line shows a block of more than one call released)
#           | observed (every rank's summary counts calls and at least one agreed plan)
#           | passthrough (every rank's summary: calls=N passthrough=N scheduled=0, N > 0 and the
#             same N on every rank: each call observed and handed to NCCL at once, none held)
#           | sampled (every rank's summary: observed < calls / 2, the rest passed straight to NCCL)
#           | sampled-noprobe (sampled, and no rank opened a bandwidth source: no INFO line of
#             'eBPF throughput from' or 'no eBPF throughput')
#           | warn:REGEX (a 'prophet: ... WARN' line matching REGEX)
#           | info:REGEX (a 'prophet: ... INFO' line matching REGEX)
#           | each:REGEX (one 'prophet: ... INFO' line matching REGEX per rank, or more)
#           | once:REGEX (exactly one 'prophet: ... INFO' line matching REGEX per rank, counted over
#             all ranks: an event logged once, not at every re-agreement)
#           | poller:MAX (every rank's summary: poller_busy_hz=N with 0 < N <= MAX, the readiness
#             poller's passes a second while it had work; a loaded host only lowers N)
#           | reasons:REGEX (every summary line: passthrough=N is observed=M plus the sum of its
#             pass_REASON=K, the calls sent straight to NCCL per reason; and one summary line per
#             rank, or more, matches REGEX)
#   PLAN    the plan check shared by every e2e test (check_plan.py on the run's PROPHET_LOG):
#           agreed  every rank's summary has plans>=1 and plan_rejects=0, and every rank agreed
#                   the same plans
#           held    agreed, and every iteration after the first plan released its calls as the
#                   plan in force partitions them
#           none    no plan expected (calls that vary, passthrough on every rank, a contract test)
set -u
build=$1 expect=$2 check=$3 plan=$4
shift 4
envs=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs="$envs $1"; shift; done
[ $# -gt 0 ] && shift
out=$(mktemp) || exit 1
logs=$(mktemp -d) || exit 1
# E2E_OWN_BPFFS=1 (among the VAR=VALUE): the job's eBPF pin dir (PROPHET_BWMON_PIN) is a bpffs
# of its own, mounted for this run on a fresh directory, so that the shared probe's owner, its pins
# and its lock file (/dev/shm, named after the pin dir: prophet_bw_shm_name) belong to this job
# alone, whether or not /sys/fs/bpf is mounted and whatever other preloaded job runs on the host
# (a fixed /sys/fs/bpf/prophet-e2e-* dir needed a bpffs that only some other test mounted, and was
# the same dir for every build tree of the host). Unmounted at exit: prophet-emu's ranks end with
# _exit(), which skips the owner's unpinning. No bpffs to be had: exit 77 (skipped).
pin="" lock=""
cleanup() {
    rm -rf "$out" "$logs"
    if [ -n "$pin" ]; then
        umount "$pin" 2>/dev/null || umount -l "$pin" 2>/dev/null
        rmdir "$pin" 2>/dev/null
        rm -f "$lock"
    fi
}
trap cleanup EXIT
case " $envs " in
*" E2E_OWN_BPFFS=1 "*)
    pin=$(mktemp -d /tmp/prophet-e2e-bpffs.XXXXXX) || exit 1
    if ! mount -t bpf bpf "$pin" 2>"$out"; then
        echo "SKIP: cannot mount a bpffs on $pin for the job's own pin dir: $(cat "$out")"
        rmdir "$pin"; pin=""; exit 77
    fi
    lock=$(python3 -c 'import sys
h = 2166136261
for c in sys.argv[1].encode(): h = ((h ^ c) * 16777619) & 0xffffffff
print("/dev/shm/prophet-bw-%08x.ranks" % h)' "$pin")
    envs="$envs PROPHET_BWMON_PIN=$pin" ;;
esac
# E2E_PRELOAD_PREFIX: a sanitizer runtime that must come first (CMake sets it in those builds)
# shellcheck disable=SC2086
env LD_LIBRARY_PATH="$build/lib/emu" LD_PRELOAD="${E2E_PRELOAD_PREFIX:+$E2E_PRELOAD_PREFIX }$build/lib/libprophet.so" \
    PROPHET_LOG="$logs" PROPHET_LOG_ITERS=0:1000000 $envs \
    "$build/bin/prophet-emu" --timeout 120 --quiet "$@" >"$out" 2>&1
rc=$?
fail() { echo "FAIL: $*"; echo "---- output (tail)"; tail -n 40 "$out"; exit 1; }
case $expect in
ok) [ $rc -eq 0 ] || fail "prophet-emu exited $rc, expected 0" ;;
wrong)
    [ $rc -eq 1 ] || fail "prophet-emu exited $rc, expected 1 (a detected early read)"
    grep -q "wrong result" "$out" || fail "no 'wrong result' report" ;;
error)
    # a failure the preload cannot work around: the error reaches the job (it exits 1, not by
    # prophet-emu's timeout), its peers fail on their own, no rank issued a mismatching call
    [ $rc -eq 1 ] || fail "prophet-emu exited $rc, expected 1 (an NCCL error reported to the job)"
    grep -q "prophet-emu: rank [0-9]*: ncclAllReduce failed" "$out" || fail "no rank reported an NCCL error"
    grep -q "collective mismatch" "$out" && fail "a collective mismatch (the ranks' calls diverged)"
    grep -q "prophet-emu: timeout after" "$out" && fail "prophet-emu timed out (a hang)"
    grep "prophet-emu: rank [0-9]*: .*failed" "$out" | head -n 2 ;;
*) fail "bad EXPECT $expect" ;;
esac
# an injected fault (EMU_FAULT, test/emu/cuda/emu_fault.c) must have hit; prophet-emu then tells
# what the interposer held when it struck ('injected fault ... held ...') and after it.
# E2E_HELD_AT_FAULT=1 (among the VAR=VALUE): calls must have been held when it struck.
case "$envs" in
*EMU_FAULT=*) grep -q "^emu-fault: .* fails with" "$out" || fail "EMU_FAULT set but no fault injected"
    grep "^emu-fault: .* fails with" "$out" | head -n 1
    hit=$(grep "^prophet-emu: rank [0-9]*: injected fault" "$out" | head -n 1)
    [ -n "$hit" ] || fail "no 'injected fault' line from prophet-emu"
    echo "$hit"
    r=$(echo "$hit" | sed -n 's/^prophet-emu: rank \([0-9]*\):.*/\1/p')
    # held when the call began, at most in this iteration, in the previous one
    h=$(echo "$hit" | sed -n 's/.*: \([0-9]*\) all-reduce(s) held .* at most \([0-9]*\) at once in this iteration, \([0-9]*\) in the previous.*/\1 \2 \3/p')
    h_call=${h%% *} h_prev=${h##* } h_iter=${h#* } h_iter=${h_iter%% *}
    [ -n "$h_prev" ] || fail "cannot read the 'injected fault' line"
    after=$(sed -n "s/^prophet-emu: rank $r: after the injected fault: held at most \([0-9]*\) .*/\1/p" "$out")
    case "$envs" in
    *PROPHET_GATE=observe*)
        # observe mode holds nothing, before or after the fault
        [ "$h_call" -eq 0 ] && [ "$h_iter" -eq 0 ] && [ "$h_prev" -eq 0 ] && [ "${after:-0}" -eq 0 ] ||
            fail "observe mode held all-reduces" ;;
    *)  if case "$envs" in *E2E_HELD_AT_FAULT=1*) true ;; *) false ;; esac; then
            # the fault must strike while calls are held: in the call that hit it, or earlier in
            # its iteration, or in the iteration before (an agreement point is an iteration's first
            # call, where nothing is held by design: blocks never span iterations); and, when the
            # job goes on, the rank must go on holding after it (not fall back to passthrough
            # alone)
            [ "$h_call" -gt 0 ] || [ "$h_iter" -gt 0 ] || [ "$h_prev" -gt 0 ] ||
                fail "nothing was held when the fault struck"
            if [ "$expect" = ok ]; then
                [ "${after:-0}" -gt 0 ] || fail "rank $r held nothing after the fault"
                echo "rank $r after the fault: held at most $after at once"
            fi
        fi ;;
    esac ;;
esac
ranks=$(echo "$*" | sed -n 's/.*--ranks \([0-9]*\).*/\1/p')
summaries=$(grep -c "prophet: .*INFO summary comm" "$out")
case $check in
none) ;;
multi)
    [ "$summaries" -eq "$ranks" ] || fail "$summaries summary lines for $ranks ranks"
    bad=$(grep "prophet: .*INFO summary comm" "$out" | grep -c "blocks>1=0 ")
    [ "$bad" -eq 0 ] || fail "$bad rank(s) formed no block of more than one call"
    grep "prophet: .*INFO summary comm" "$out" | head -n 1 ;;
multi-trace)
    grep -Eq "prophet: .*TRACE comm [0-9]+: block [0-9]+ released: ([2-9]|[1-9][0-9]+) calls" "$out" ||
        fail "no block of more than one call was released" ;;
observed)
    [ "$summaries" -eq "$ranks" ] || fail "$summaries summary lines for $ranks ranks"
    bad=$(grep "prophet: .*INFO summary comm" "$out" | grep -Ec "calls=0 |plans=0 ")
    [ "$bad" -eq 0 ] || fail "$bad rank(s) observed no calls or agreed no plan"
    grep "prophet: .*INFO summary comm" "$out" | head -n 1 ;;
passthrough)
    [ "$summaries" -eq "$ranks" ] || fail "$summaries summary lines for $ranks ranks"
    grep "prophet: .*INFO summary comm" "$out" |
        sed -n 's/.* calls=\([0-9]*\) scheduled=\([0-9]*\) passthrough=\([0-9]*\) .*/\1 \2 \3/p' >"$out.s"
    n=$(head -n 1 "$out.s" | cut -d' ' -f1)
    bad=$(awk -v n="$n" '$1 != n || $2 != 0 || $3 != n || n == 0' "$out.s" | wc -l)
    rm -f "$out.s"
    [ "$(grep -c "prophet: .*INFO summary comm" "$out")" -eq "$ranks" ] && [ "$bad" -eq 0 ] ||
        fail "not every rank passed all of the same $n calls through unheld"
    grep "prophet: .*INFO summary comm" "$out" | head -n 1 ;;
sampled | sampled-noprobe)
    # a comm that agrees no plan observes only sampled runs once unsettled (schedule.h): on every
    # rank, fewer than half of the calls went through events of ours, the rest straight to NCCL
    [ "$summaries" -eq "$ranks" ] || fail "$summaries summary lines for $ranks ranks"
    bad=$(grep "prophet: .*INFO summary comm" "$out" |
        sed -n 's/.* calls=\([0-9]*\) .* observed=\([0-9]*\).*/\1 \2/p' |
        awk '$1 == 0 || 2 * $2 >= $1' | wc -l)
    [ "$bad" -eq 0 ] || fail "$bad rank(s) observed half of their calls or more (summary: observed)"
    grep "prophet: .*INFO summary comm" "$out" | head -n 1
    # the probe is opened once a comm finds its iteration (readiness_poller.h): never here
    if [ "$check" = sampled-noprobe ]; then
        opened=$(grep -Ec "prophet: .*INFO (eBPF throughput from|no eBPF throughput)" "$out")
        [ "$opened" -eq 0 ] || fail "$opened rank(s) opened a bandwidth source: $(grep -Em1 \
            "prophet: .*INFO (eBPF throughput from|no eBPF throughput)" "$out")"
        echo "no rank opened a bandwidth source"
    fi ;;
warn:*)
    re=${check#warn:}
    grep -Eq "prophet: .*WARN .*$re" "$out" || fail "no WARN line matching '$re'"
    grep -E "prophet: .*WARN .*$re" "$out" | head -n 1 ;;
info:*)
    re=${check#info:}
    grep -Eq "prophet: .*INFO .*$re" "$out" || fail "no INFO line matching '$re'"
    grep -E "prophet: .*INFO .*$re" "$out" | tail -n 1 ;;
each:*)
    re=${check#each:}
    n=$(grep -Ec "prophet: .*INFO .*$re" "$out")
    # on a miss, what the ranks said instead (the regex less its last word)
    [ "$n" -ge "$ranks" ] || fail "$n INFO lines matching '$re' for $ranks ranks; the" \
        "lines matching '${re% *}':$(printf '\n'; grep -E "prophet: .*INFO .*${re% *}" "$out" | head -n 8)"
    echo "$n INFO lines matching '$re' for $ranks ranks" ;;
once:*)
    re=${check#once:}
    n=$(grep -Ec "prophet: .*INFO .*$re" "$out")
    [ "$n" -eq "$ranks" ] ||
        fail "$n INFO lines matching '$re' for $ranks ranks (one each expected)"
    echo "$n INFO lines matching '$re' for $ranks ranks" ;;
poller:*)
    max=${check#poller:}
    [ "$summaries" -eq "$ranks" ] || fail "$summaries summary lines for $ranks ranks"
    bad=$(grep "prophet: .*INFO summary comm" "$out" | sed -n 's/.* poller_busy_hz=\([0-9]*\).*/\1/p' |
        awk -v max="$max" '$1 == 0 || $1 > max' | wc -l)
    n=$(grep "prophet: .*INFO summary comm" "$out" | grep -c " poller_busy_hz=[0-9]")
    [ "$n" -eq "$ranks" ] && [ "$bad" -eq 0 ] || fail "$bad rank(s) with the poller busy more" \
        "than $max times a second, or never ($n summaries with the figure)"
    grep "prophet: .*INFO summary comm" "$out" |
        sed -n 's/.*\(rank [0-9]*\/[0-9]*\).* \(poller_busy_hz=[0-9]*\).*/\1 \2/p' ;;
reasons:*)
    re=${check#reasons:}
    bad=$(grep "prophet: .*INFO summary comm" "$out" | awk '{
        p = -1; o = -1; s = 0
        for (i = 1; i <= NF; i++) {
            split($i, kv, "=")
            if (kv[1] == "passthrough") p = kv[2]
            else if (kv[1] == "observed") o = kv[2]
            else if (kv[1] ~ /^pass_/) s += kv[2]
        }
        if (p < 0 || o < 0 || p != o + s) print
    }')
    [ -z "$bad" ] || fail "passthrough is not observed plus the pass_* reasons:$(printf '\n%s' "$bad")"
    n=$(grep "prophet: .*INFO summary comm" "$out" | grep -Ec -- "$re")
    [ "$n" -ge "$ranks" ] || fail "$n summary lines matching '$re' for $ranks ranks"
    grep "prophet: .*INFO summary comm" "$out" | grep -E -- "$re" | head -n 1 ;;
*) fail "bad CHECK $check" ;;
esac
case $plan in
none) ;;
agreed | held | trials)
    [ "$summaries" -eq "$ranks" ] || fail "$summaries summary lines for $ranks ranks"
    bad=$(grep "prophet: .*INFO summary comm" "$out" | grep -Evc " plans=[1-9][0-9]* plan_rejects=0 ")
    [ "$bad" -eq 0 ] || fail "$bad rank(s) agreed no plan or rejected one (summary: plans, plan_rejects)"
    python3 "$(dirname "$0")/check_plan.py" "$logs" "$ranks" "$plan" >"$out.plan" 2>&1 ||
        { cat "$out.plan"; rm -f "$out.plan"; fail "the plan check failed"; }
    cat "$out.plan"; rm -f "$out.plan" ;;
*) fail "bad PLAN $plan" ;;
esac
echo "PASS"
