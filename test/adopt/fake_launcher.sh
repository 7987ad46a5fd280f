#!/bin/sh
# A stand-in for a job launcher: starts N workers that each record what they got.
#   fake_launcher.sh torchrun OUT N            workers inherit the environment (torchrun, horovodrun)
#   fake_launcher.sh mpirun OUT N [-x VAR]...  workers get only the variables named with -x (mpirun)
# Each worker writes OUT/worker.I: its LD_PRELOAD, PROPHET_* variables and the libprophet.so mapped
# into it (from /proc/self/maps).
set -u
kind=$1 out=$2 n=$3
shift 3
fwd=""
while [ $# -gt 0 ]; do
    case "$1" in
    -x) fwd="$fwd $2=\$(printenv $2)"; shift 2 ;;
    *) shift ;;
    esac
done
worker='{ echo "LD_PRELOAD=${LD_PRELOAD:-}"; env | grep "^PROPHET_" | sort; grep -o "/[^ ]*libprophet.so" /proc/$$/maps | sort -u | sed "s/^/mapped=/"; } >"$0"'
i=0
while [ $i -lt "$n" ]; do
    case $kind in
    torchrun) sh -c "$worker" "$out/worker.$i" & ;;
    mpirun) eval "env -i PATH=\"\$PATH\" $fwd sh -c '$worker' '$out/worker.$i'" & ;;
    esac
    i=$((i + 1))
done
wait
