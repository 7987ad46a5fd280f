#!/bin/sh
# A worker for fake_launcher.sh: writes DIR/worker.$RANK with its LD_PRELOAD, its PROPHET_*
# variables and the libprophet.so mapped into it (from /proc/self/maps).
# usage: worker_record.sh DIR
{
    echo "LD_PRELOAD=${LD_PRELOAD:-}"
    env | grep "^PROPHET_" | sort
    grep -o "/[^ ]*libprophet.so" /proc/$$/maps | sort -u | sed "s/^/mapped=/"
} >"$1/worker.${RANK:-x}"
