# A testbed of "nodes" on one machine, sourced by the testbed tests and benchmarks:
# each node is a network namespace (its own interfaces, addresses and routes), its
# jobs run in a UTS namespace of their own (its own hostname), and the nodes hang off
# one bridge in a switch namespace of its own through veth pairs, so that nothing of
# the machine's own network is touched. Each node's uplink can be shaped with tc:
# a rate (tbf) and a one-way latency (netem, where the kernel has it; else the uplink
# becomes the two TAP devices of a delay_link process, the program TESTBED_DELAY_LINK
# names, built beside the tests from delay_link.c). mpirun runs in
# node 0 and starts Open MPI's daemons in the other nodes through agent.sh instead
# of ssh. Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2.
#
#   testbed_check                 exits 77 (skipped) with the reason when it cannot run here
#   testbed_up NODES              creates the nodes, 10.99.0.1 ... on 10.99.0.0/24
#   testbed_shape RATE [LATENCY]  shapes every node's uplink, e.g. 1gbit 1ms (tc units)
#   testbed_hostfile SLOTS        a hostfile of the nodes with SLOTS ranks each, on stdout
#   testbed_mpirun ARGS...        mpirun in node 0 over the nodes (ARGS: -np, --hostfile, ...)
#   testbed_link NODE up|down     takes node NODE's link to the switch down or up again
#   testbed_down                  ends what runs in the nodes and removes them (testbed_up traps EXIT)
# A sourced file cannot find itself in POSIX sh: the caller says where it is.
TESTBED_DIR=$(cd "${TESTBED_DIR:?set TESTBED_DIR to tests/testbed before sourcing testbed.sh}" && pwd)
FSDP_TESTBED=fsdptb$$ # unique per testbed, so that two can run at once
TESTBED_NODES=0
TESTBED_SHAPED=""
TESTBED_UPLINK_DELAY=""
TESTBED_RELAYS=${TMPDIR:-/tmp}/$FSDP_TESTBED-relays # each delay_link's pid, by node

testbed_skip() {
  echo "SKIPPED: $*"
  exit 77
}

testbed_check() {
  [ "$(id -u)" -eq 0 ] || testbed_skip "the testbed needs root (network namespaces)"
  command -v ip >/dev/null || testbed_skip "no ip command (install iproute2)"
  command -v tc >/dev/null || testbed_skip "no tc command (install iproute2)"
  command -v unshare >/dev/null || testbed_skip "no unshare command (install util-linux)"
  ip netns add "$FSDP_TESTBED-probe" 2>/dev/null || testbed_skip "cannot create network namespaces here"
  ip netns del "$FSDP_TESTBED-probe"
  unshare --uts true 2>/dev/null || testbed_skip "cannot create UTS namespaces here"
}

# in NAMESPACE COMMAND...
in_ns() {
  ns=$1
  shift
  ip netns exec "$FSDP_TESTBED-$ns" "$@"
}

testbed_up() {
  TESTBED_NODES=$1
  trap testbed_down EXIT
  trap 'exit 2' INT TERM
  ip netns add "$FSDP_TESTBED-sw"
  in_ns sw ip link set lo up
  in_ns sw ip link add br0 type bridge
  in_ns sw ip link set br0 up
  i=0
  while [ $i -lt "$TESTBED_NODES" ]; do
    ip netns add "$FSDP_TESTBED-n$i"
    in_ns "n$i" ip link set lo up
    # A lost node must be noticed within seconds, as a cluster's failure detection
    # would: Open MPI's daemons talk over TCP, which otherwise retransmits for ~15
    # minutes before giving up on a peer (tcp_retries2 is per network namespace).
    in_ns "n$i" sh -c 'echo 4 >/proc/sys/net/ipv4/tcp_retries2'
    testbed_uplink "$i"
    i=$((i + 1))
  done
}

# testbed_uplink NODE [DELAY]: node NODE's eth0 and the switch's port$NODE, a veth pair,
# or with DELAY the two devices of a delay_link process, which delays what the node
# sends (for kernels without netem). Replaces the node's uplink if it has one.
testbed_uplink() {
  node=$1 delay=${2:-}
  if in_ns sw ip link show "port$node" >/dev/null 2>&1; then
    relay=$(cat "$TESTBED_RELAYS/$node" 2>/dev/null || true)
    if [ -n "$relay" ]; then
      kill "$relay"
      # Its devices go when it has gone.
      while in_ns sw ip link show "port$node" >/dev/null 2>&1 ||
        in_ns "n$node" ip link show eth0 >/dev/null 2>&1; do sleep 0.05; done
    else
      in_ns sw ip link del "port$node"
    fi
    rm -f "$TESTBED_RELAYS/$node"
  fi
  if [ -n "$delay" ]; then
    mkdir -p "$TESTBED_RELAYS"
    in_ns sw "$TESTBED_DELAY_LINK" "$delay" "up$node" "port$node" >"$TESTBED_RELAYS/$node"
    in_ns sw ip link set "up$node" netns "$FSDP_TESTBED-n$node"
    in_ns "n$node" ip link set "up$node" name eth0
  else
    in_ns sw ip link add "port$node" type veth peer name eth0 netns "$FSDP_TESTBED-n$node"
  fi
  in_ns sw ip link set "port$node" master br0 up
  in_ns "n$node" ip addr add "10.99.0.$((node + 1))/24" dev eth0
  in_ns "n$node" ip link set eth0 up
}

# Egress of each node's eth0: what a node sends goes through its link at RATE, and
# LATENCY later, so that between two nodes the link is RATE each way and LATENCY one way.
# The latency is netem's where the kernel has it, else delay_link's (TESTBED_DELAY_LINK).
testbed_shape() {
  rate=$1 latency=${2:-}
  how=tbf
  if [ -n "$latency" ] && in_ns n0 tc qdisc replace dev eth0 root netem delay "$latency" rate "$rate" limit 100000 2>/dev/null; then
    how=netem
  elif [ -n "$latency" ] && [ -n "${TESTBED_DELAY_LINK:-}" ] && [ -c /dev/net/tun ]; then
    how=delay_link
  fi
  delay=""
  [ $how = delay_link ] && delay=$latency
  i=0
  while [ $i -lt "$TESTBED_NODES" ]; do
    [ "$delay" = "$TESTBED_UPLINK_DELAY" ] || testbed_uplink $i "$delay"
    if [ $how = netem ]; then
      in_ns "n$i" tc qdisc replace dev eth0 root netem delay "$latency" rate "$rate" limit 100000
    else
      # Offloads hand tbf 64 KiB packets; a burst of 256 KiB takes them whole.
      in_ns "n$i" tc qdisc replace dev eth0 root tbf rate "$rate" burst 256kb latency 50ms
    fi
    i=$((i + 1))
  done
  TESTBED_UPLINK_DELAY=$delay
  case $how in
    netem) TESTBED_SHAPED="rate $rate, latency $latency (netem)" ;;
    delay_link) TESTBED_SHAPED="rate $rate (tbf), latency $latency (delay_link: this kernel has no netem)" ;;
    *) TESTBED_SHAPED="rate $rate, latency not shaped"
      [ -n "$latency" ] && TESTBED_SHAPED="rate $rate (tbf); latency $latency not shaped: no netem, no delay_link or /dev/net/tun" ;;
  esac
  echo "testbed: $TESTBED_NODES nodes, each uplink $TESTBED_SHAPED"
}

testbed_hostfile() {
  i=0
  while [ $i -lt "$TESTBED_NODES" ]; do
    echo "10.99.0.$((i + 1)) slots=$1"
    i=$((i + 1))
  done
}

# Only the nodes' interface carries MPI's traffic and Open MPI's own (never lo across
# nodes); no tree spawn: node 0's mpirun starts every daemon itself.
testbed_mpirun() {
  in_ns n0 unshare --uts env FSDP_TESTBED="$FSDP_TESTBED" sh -c 'hostname "$FSDP_TESTBED-node0" && exec "$@"' sh \
    mpirun --allow-run-as-root --oversubscribe \
    --mca plm_rsh_agent "$TESTBED_DIR/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl_tcp_if_include 10.99.0.0/24 --mca oob_tcp_if_include 10.99.0.0/24 \
    -x OMP_NUM_THREADS=1 "$@"
}

testbed_link() {
  in_ns sw ip link set "port$1" "$2"
}

testbed_down() {
  for ns in $(ip netns list | awk -v p="$FSDP_TESTBED-" 'index($1, p) == 1 { print $1 }'); do
    # Whatever this testbed started in its namespaces (daemons, ranks) ends with it.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$TESTBED_RELAYS"
}
