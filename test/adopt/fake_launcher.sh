#!/bin/sh
# A stand-in for a job launcher, chosen by its first argument or by the name it is called by (a
# link named torchrun, horovodrun, mpirun or srun). It starts N copies of the command with the
# environment that launcher gives a worker on another host, each with RANK set:
#   torchrun [--nproc_per_node=N] [--standalone] [--no-python] [--OPT=V]... SCRIPT [ARG]...
#                 python3 SCRIPT (or SCRIPT itself with --no-python); the whole environment
#   horovodrun -np N COMMAND...             the whole environment (Horovod forwards it)
#   mpirun [-x VAR[=V]]... -np N COMMAND... only the variables named with -x, and PATH
#   srun [--export=ALL|NONE|VAR[=V],...] -n N COMMAND...
#                 ALL (the default): the whole environment and the assignments; otherwise only
#                 the variables named, SLURM_* and PATH
# Exit status: 1 when a worker failed, 2 for a usage error.
set -u
kind=$(basename "$0")
case $kind in fake_launcher*) kind=${1:?usage: fake_launcher.sh KIND ARGS...}; shift ;; esac
n=1 keep="" assign="" all=1 python=1
add() { # VAR or VAR=VALUE: keep VAR in the worker's environment (and set it)
    case $1 in
    *=*) keep="$keep ${1%%=*}"; assign="$assign
$1" ;;
    *) keep="$keep $1" ;;
    esac
}
case $kind in
torchrun)
    while [ $# -gt 0 ]; do
        case $1 in
        --nproc_per_node=* | --nproc-per-node=*) n=${1#*=}; shift ;;
        --nproc_per_node | --nproc-per-node) n=$2; shift 2 ;;
        --no-python) python=0; shift ;;
        --standalone) shift ;;
        --*=*) shift ;;
        --*) shift 2 ;;
        *) break ;;
        esac
    done
    [ $python -eq 1 ] && set -- python3 "$@" ;;
horovodrun)
    while [ $# -gt 0 ]; do
        case $1 in
        -np) n=$2; shift 2 ;;
        -H) shift 2 ;;
        *) break ;;
        esac
    done ;;
mpirun)
    all=0
    while [ $# -gt 0 ]; do
        case $1 in
        -np | -n) n=$2; shift 2 ;;
        -x) add "$2"; shift 2 ;;
        -H) shift 2 ;;
        --) shift; break ;;
        *) break ;;
        esac
    done ;;
srun)
    while [ $# -gt 0 ]; do
        case $1 in
        -n) n=$2; shift 2 ;;
        --ntasks=*) n=${1#*=}; shift ;;
        --export=*)
            spec=${1#*=}; shift
            all=0
            oifs=$IFS IFS=,
            for v in $spec; do
                case $v in
                ALL) all=1 ;;
                NONE) ;;
                *) add "$v" ;;
                esac
            done
            IFS=$oifs ;;
        -N) shift 2 ;;
        *) break ;;
        esac
    done ;;
*) echo "fake_launcher.sh: unknown launcher $kind" >&2; exit 2 ;;
esac
[ $# -gt 0 ] || { echo "fake_launcher.sh: $kind: no command" >&2; exit 2; }

worker() { # RANK: the environment this launcher gives, then the command
    if [ $all -eq 0 ]; then
        for v in $(env | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p'); do
            case " PATH $keep " in
            *" $v "*) ;;
            *) case $v in SLURM_*) [ "$kind" = srun ] || unset "$v" ;; *) unset "$v" ;; esac ;;
            esac
        done
    fi
    oifs=$IFS IFS='
'
    for a in $assign; do export "${a?}"; done
    IFS=$oifs
    export RANK=$1 FAKE_LAUNCHER=$kind
    shift
    exec "$@"
}
i=0 pids=""
while [ $i -lt "$n" ]; do
    (worker $i "$@") &
    pids="$pids $!"
    i=$((i + 1))
done
st=0
for p in $pids; do wait "$p" || st=1; done
exit $st
