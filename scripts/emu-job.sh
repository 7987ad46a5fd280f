# Sourced by scripts/probe-job-cost.sh and scripts/preload-cpu.sh (POSIX sh): one prophet-emu run
# as scripts/bench.py runs it (its --scale and --elements-scale, the link paced at $bw, no emulated
# latency), timed by /usr/bin/time into TIME: "wall user system voluntary involuntary" (seconds,
# context switches) on its last line. Reads $root $emu_build $profile $mode $extra $ranks $bw
# $iters $warmup. Returns prophet-emu's status.
#   emu_job JSON ERR TIME [VAR=VALUE ...]
emu_job() {
    ej_json=$1 ej_err=$2 ej_time=$3
    shift 3
    # shellcheck disable=SC2086 # $extra is empty or one flag
    /usr/bin/time -f "%e %U %S %w %c" -o "$ej_time" \
        env LD_LIBRARY_PATH="$emu_build/lib/emu" EMU_NCCL_BW="$bw" EMU_NCCL_LATENCY_US=0 "$@" \
        "$emu_build/bin/prophet-emu" --ranks "$ranks" --profile "$root/profiles/$profile.json" \
        --mode "$mode" $extra --iters "$iters" --warmup "$warmup" --wait all \
        --json "$ej_json" --quiet --timeout 900 --scale 0.5 --elements-scale 0.05 2>"$ej_err"
}
