# Sourced by the tests that kill a rank of a running job: finding its processes.
# Needs fsdp_exe, the resolved path of the fsdp binary.

# is_rank PID: PID is a live process of this job's fsdp (its rank environment
# guards against a reused PID; a zombie has no exe and counts as gone).
is_rank() {
  [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$fsdp_exe" ] &&
    tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | grep -q '^OMPI_COMM_WORLD_RANK='
}

# rank_env PID: the rank in PID's environment, or nothing.
rank_env() { tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p'; }

# descendants PID: every process below PID (the ranks are the launcher's children
# here, but a daemon between them would not hide them).
descendants() {
  ps -eo pid=,ppid= | awk -v root="$1" '
    { parent[$1] = $2 }
    END { for (p in parent) { q = p; while ((q in parent) && q != root && q > 1) q = parent[q]; if (q == root && p != root) print p } }'
}

# find_ranks LAUNCHER_PID RANK: sets ranks (the job's rank processes below the launcher)
# and victim (the one of rank RANK, or nothing).
find_ranks() {
  ranks="" victim=""
  for p in $(descendants "$1"); do
    is_rank "$p" || continue
    ranks="$ranks $p"
    [ "$(rank_env "$p")" = "$2" ] && victim=$p
  done
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
past() { [ "$(awk -v t="$(elapsed "$1")" -v l="$2" 'BEGIN { print (t > l) }')" = 1 ]; }  # past START SECONDS
