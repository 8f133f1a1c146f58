#!/bin/sh
# mpirun's launch agent on the testbed (--mca plm_rsh_agent), in ssh's place: called
# as `agent.sh HOST COMMAND...` with HOST a node's address from the hostfile, it runs
# COMMAND (Open MPI's orted, as one shell command line, the way ssh passes it) inside
# that node's network namespace, in a UTS namespace of its own named after the node,
# so that Open MPI sees another host: TCP to the other nodes, shared memory within.
# The namespaces are named by FSDP_TESTBED (testbed.sh sets it for mpirun).
host=${1:?usage: agent.sh HOST COMMAND...}
shift
prefix=${FSDP_TESTBED:?agent.sh: FSDP_TESTBED is not set (start jobs with testbed_mpirun)}
# Node i has address 10.99.0.(i+1) (testbed.sh).
node=$(( ${host##*.} - 1 ))
exec ip netns exec "$prefix-n$node" unshare --uts sh -c 'hostname "$1" && shift && exec sh -c "$*"' sh \
  "$prefix-node$node" "$@"
