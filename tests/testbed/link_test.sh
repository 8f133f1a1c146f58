#!/bin/sh
# The testbed's links (testbed.sh) are what they are shaped to: between two nodes a
# round trip of twice the one-way latency and a transfer at the rate, with the latency
# netem's or, on kernels without netem, delay_link's; and plain veths again once the
# latency is taken off. Skipped (77) where the testbed cannot run.
# Usage: link_test.sh PYTHON   (TESTBED_DELAY_LINK: the delay_link program)
PYTHON=${1:?usage: link_test.sh PYTHON}
TESTBED_DIR=$(dirname "$0")
. "$TESTBED_DIR/testbed.sh"
set -eu
testbed_check
testbed_up 2
trap testbed_down EXIT

# expect RATE_MBIT LATENCY_MS MEGABYTES SHAPE...: the round trip in [2 latency, 2 latency
# + 5 ms] (a loaded machine's scheduling on top) and the rate in [0.6, 1.1] x RATE_MBIT,
# or unchecked where RATE_MBIT is -: at 1 Gbit/s the probe's own processes may be what
# a machine loaded by other tests limits.
# (testbed.sh's functions set names of their own: these are prefixed.)
expect() {
  want_rate=$1 want_latency=$2 megabytes=$3
  shift 3
  testbed_shape "$@"
  case $TESTBED_SHAPED in *"not shaped:"*)
    [ -c /dev/net/tun ] || testbed_skip "no netem and no /dev/net/tun: no latency can be shaped here"
    echo "FAIL: the latency was not shaped ($TESTBED_SHAPED)"
    exit 1 ;;
  esac
  in_ns n1 "$PYTHON" "$TESTBED_DIR/link_probe.py" serve 10.99.0.2 &
  measured=$(in_ns n0 "$PYTHON" "$TESTBED_DIR/link_probe.py" probe 10.99.0.2 "$megabytes")
  wait
  echo "$*: round trip $(echo "$measured" | cut -d' ' -f1) ms, $(echo "$measured" | cut -d' ' -f2) Mbit/s"
  echo "$measured" | awk -v rate="$want_rate" -v latency="$want_latency" '{
    if ($1 < 2 * latency || $1 > 2 * latency + 5) { print "FAIL: round trip " $1 " ms, not " 2 * latency " ms"; exit 1 }
    if (rate != "-" && ($2 < 0.6 * rate || $2 > 1.1 * rate)) { print "FAIL: " $2 " Mbit/s, not " rate; exit 1 } }'
}

expect 100 0 4 100mbit
expect 100 5 4 100mbit 5ms
expect - 1 40 1gbit 1ms
expect 100 0 4 100mbit
echo "PASS: the testbed's links have the latency and the rate they were shaped to"
