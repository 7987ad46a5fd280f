#!/bin/sh
# bpf.bytes_netns: the probe's byte counts over a veth pair between two network namespaces.
# usage: bytes_netns.sh BW_TRAFFIC. Exit 0 pass, 1 fail, 77 skipped.
bw=$1
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: ip (iproute2) not installed"; exit 77; }
tag=pbw$$
a=${tag}a b=${tag}b
cleanup() {
    ip netns del "$a" 2>/dev/null
    ip netns del "$b" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
# octet from the pid so that parallel runs do not share a subnet inside their namespaces (harmless
# anyway: each namespace pair is private)
ip netns add "$a" && ip netns add "$b" || { echo "SKIP: cannot create network namespaces"; exit 77; }
set -e
ip link add "${tag}x" netns "$a" type veth peer name "${tag}y" netns "$b"
ip -n "$a" addr add 10.231.0.1/24 dev "${tag}x"
ip -n "$b" addr add 10.231.0.2/24 dev "${tag}y"
ip -n "$a" link set lo up
ip -n "$b" link set lo up
ip -n "$a" link set "${tag}x" up
ip -n "$b" link set "${tag}y" up
set +e
"$bw" check --bytes 200000000 --rate 200000000 --netns "$a" "$b" 10.231.0.2
