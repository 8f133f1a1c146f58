#!/bin/sh
# `fsdp plan --device cuda` runs the GPU's step on the meta device (no GPU needed): with
# bf16 compute the unsharded parameters and gradients are 2 bytes an element, and with
# --offload cpu the sharded state is pinned host memory, apart from the GPU's, which holds
# only transient copies of shards. Exact bytes for one unit (--wrap none) of P padded
# elements over W ranks (a shard of s = P / W):
#   unsharded_params, unsharded_grads   P x the compute dtype's bytes
#   sharded_params, sharded_grads       4 s each, optimizer 8 s: on the GPU, or in host
#                                       memory (pinned) under --offload cpu, the GPU's zero
#   comm, offloaded minus not           4 s: the reduction's result on the GPU before its
#                                       copy to the host (with bf16 parameters reduced in
#                                       bf16: 2 s, as the gather's fp32 shard copy of 4 s
#                                       then sets the peak instead of its bf16 one of 2 s)
#   host other                          16 B T: the token batches, pinned for asynchronous
#                                       copies, two of inputs and targets in turn
# And every strategy and reduce dtype plans GPT-2 and Llama 3 in bf16, with and without
# offload, per block: the bf16 unsharded parameters exactly what the CPU's bf16 plan
# gathers (both compute in bf16, the same units), half of the CPU's fp32 plan (full and
# grad-op; an fp32 model without sharding gathers nothing).
# Usage: plan_cuda_test.sh path/to/fsdp PYTHON
FSDP=${1:?usage: plan_cuda_test.sh path/to/fsdp PYTHON}
PYTHON=${2:?usage: plan_cuda_test.sh path/to/fsdp PYTHON}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

GPT2="--model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 4 --vocab-size 128 --block-size 32 --seq-len 32 \
--batch-size 2"
LLAMA="--model llama3-debug --n-layer 2 --n-embd 64 --n-head 4 --n-kv-head 2 --ffn-hidden 96 --vocab-size 128 \
--block-size 32 --seq-len 32 --batch-size 2"

if ! "$FSDP" plan --device cuda --world-size 1 $GPT2 > "$tmp/probe.txt" 2>&1; then
  if grep -q "built without" "$tmp/probe.txt"; then echo "SKIPPED: no cuda kernels in this build"; exit 77; fi
  cat "$tmp/probe.txt"
  exit 1
fi

# plan NAME FLAGS...: the JSON plan in $tmp/NAME.json, for cuda, or for $DEVICE.
plan() {
  name=$1
  shift
  # shellcheck disable=SC2068
  if ! "$FSDP" plan --device "${DEVICE:-cuda}" --format json $@ > "$tmp/$name.json" 2> "$tmp/$name.err"; then
    echo "FAIL: fsdp plan --device ${DEVICE:-cuda} $*: $(cat "$tmp/$name.err")"
    exit 1
  fi
}

for w in 2 4; do
  for dtypes in "fp32 fp32" "bf16 bf16" "bf16 fp32"; do
    set -- $dtypes
    for offload in none cpu; do
      plan "one-$w-$1-$2-$offload" $GPT2 --wrap none --world-size $w --param-dtype $1 --reduce-dtype $2 \
        --offload $offload
    done
  done
done
for model in gpt2 llama; do
  if [ $model = gpt2 ]; then flags=$GPT2; else flags=$LLAMA; fi
  for sharding in full grad-op none; do
    for reduce in fp32 bf16; do
      [ $sharding = none ] && [ $reduce = bf16 ] && continue
      for offload in none cpu; do
        plan "block-$model-$sharding-$reduce-$offload" $flags --world-size 2 --sharding $sharding \
          --param-dtype bf16 --reduce-dtype $reduce --offload $offload
      done
    done
    DEVICE=cpu plan "block-$model-$sharding-cpu" $flags --world-size 2 --sharding $sharding --param-dtype bf16
    DEVICE=cpu plan "block-$model-$sharding-cpu-fp32" $flags --world-size 2 --sharding $sharding
  done
done

# Accumulation in both modes, fp16 with its loss scale, and HSDP, offloaded: they plan.
for extra in "--grad-accum 2 --accum-mode sharded" "--grad-accum 2 --accum-mode no-sync" "--param-dtype fp16" \
  "--world-size 4 --mesh 2,2" "--sharding none --grad-accum 2"; do
  plan more $GPT2 --world-size 2 --param-dtype bf16 --offload cpu $extra
done

# The GPU arch a plan is for: --cuda-arch's, else this machine's GPU's, else sm_90; its
# shared memory a block and the attention's tiling there, at head dim 128 in fp32 (sm_86:
# fewer rows, sm_90: whole tiles) and at 16 in bf16 (CUDA cores: tensor cores take 64, 128).
HD128="--n-embd 256 --n-head 2"
plan arch-86 $GPT2 --world-size 1 --cuda-arch sm_86 $HD128
plan arch-90 $GPT2 --world-size 1 --cuda-arch=sm_90 $HD128
plan arch-120-bf16 $GPT2 --world-size 1 --cuda-arch sm_120 --param-dtype bf16
plan arch-80-bf16-64 $GPT2 --world-size 1 --cuda-arch sm_80 --param-dtype bf16 --n-embd 128 --n-head 2
plan arch-default $GPT2 --world-size 1
text=$("$FSDP" plan --device cuda --world-size 1 $GPT2 --cuda-arch sm_89 $HD128) || exit 1
for want in "GPU arch sm_89 (compute capability 8.9: L4, L40, L40S" "--cuda-arch): 101376 bytes (99 KiB)" \
  "attention at head dim 128 in fp32: CUDA cores, 74496 / 91008 / 86912 bytes" "rows at a time"; do
  case $text in
    *"$want"*) ;;
    *) echo "FAIL: fsdp plan --cuda-arch sm_89 does not say '$want':"; echo "$text"; exit 1 ;;
  esac
done

"$PYTHON" - "$tmp" <<'PY'
import json, os, sys
tmp = sys.argv[1]
def load(name):
    return json.load(open(os.path.join(tmp, name + ".json")))
failures = 0
def expect(what, got, want):
    global failures
    if got != want:
        failures += 1
        print(f"FAIL {what}: {got}, expected {want}")
STATE = ("sharded_params", "sharded_grads", "optimizer")
for w in (2, 4):
    for pd, rd in (("fp32", "fp32"), ("bf16", "bf16"), ("bf16", "fp32")):
        base = f"one-{w}-{pd}-{rd}"
        on, off = load(base + "-none"), load(base + "-cpu")
        P = on["parameters"]  # this model's single unit needs no padding
        assert P % (16 * w) == 0, P
        s = P // w
        size = 4 if pd == "fp32" else 2
        for name, plan in ((base, on), (base + " offloaded", off)):
            expect(f"{name} unsharded_params", plan["peak_bytes"]["unsharded_params"], size * P)
            expect(f"{name} unsharded_grads", plan["peak_bytes"]["unsharded_grads"], size * P)
        state = {"sharded_params": 4 * s, "sharded_grads": 4 * s, "optimizer": 8 * s}
        for c in STATE:
            expect(f"{base} {c}", on["peak_bytes"][c], state[c])
            expect(f"{base} host {c}", on["host_peak_bytes"][c], 0)
            expect(f"{base} offloaded {c}", off["peak_bytes"][c], 0)
            expect(f"{base} offloaded host {c}", off["host_peak_bytes"][c], state[c])
        tokens = 16 * 2 * 32  # B = 2, T = 32
        for name, plan in ((base, on), (base + " offloaded", off)):
            expect(f"{name} host other", plan["host_peak_bytes"]["other"], tokens)
        expect(f"{base} offloaded host total", off["host_total_peak_bytes"], 16 * s + tokens)
        extra = 2 * s if (pd, rd) == ("bf16", "bf16") else 4 * s
        expect(f"{base} offloaded comm minus not", off["peak_bytes"]["comm"] - on["peak_bytes"]["comm"], extra)
        print(f"ok W={w} {pd}/{rd}: P {P}, GPU total {on['total_peak_bytes']} -> {off['total_peak_bytes']} "
              f"offloaded, host {off['host_total_peak_bytes']}")
for model in ("gpt2", "llama"):
    for sharding in ("full", "grad-op", "none"):
        cpu = load(f"block-{model}-{sharding}-cpu")["peak_bytes"]["unsharded_params"]
        fp32 = load(f"block-{model}-{sharding}-cpu-fp32")["peak_bytes"]["unsharded_params"]
        if sharding != "none":  # fp32 without sharding gathers nothing: the shard is the parameter
            expect(f"{model} {sharding}: the cpu's bf16 unsharded_params", 2 * cpu, fp32)
        for rd in ("fp32", "bf16"):
            if sharding == "none" and rd == "bf16":
                continue
            for offload in ("none", "cpu"):
                plan = load(f"block-{model}-{sharding}-{rd}-{offload}")
                expect(f"{model} {sharding} bf16/{rd} offload {offload}: unsharded_params",
                       plan["peak_bytes"]["unsharded_params"], cpu)
                host = sum(plan["host_peak_bytes"][c] for c in STATE)
                gpu = sum(plan["peak_bytes"][c] for c in STATE)
                what = f"{model} {sharding} bf16/{rd} offload {offload}: state"
                expect(f"{what} on the GPU", gpu == 0, offload == "cpu")
                expect(f"{what} on the host", host == 0, offload == "none")
        print(f"ok {model} {sharding}: bf16 unsharded params {cpu} bytes on the GPU and the CPU, fp32 {fp32}")
def tiling(plan):
    a = plan["cuda_arch"]["attention"]
    return [(a[k]["rows"], a[k]["smem_bytes"]) for k in ("forward", "backward_kv", "backward_q")]
for name, arch, cc, smem, hd, dtype, tc, want in (
        ("arch-86", "sm_86", "8.6", 101376, 128, "fp32", False, [(32, 74496), (16, 91008), (16, 86912)]),
        ("arch-90", "sm_90", "9.0", 232448, 128, "fp32", False, [(64, 115712), (64, 165888), (64, 148736)]),
        ("arch-120-bf16", "sm_120", "12.0", 101376, 16, "bf16", False, [(64, 29696), (64, 51200), (64, 34048)]),
        ("arch-80-bf16-64", "sm_80", "8.0", 166912, 64, "bf16", True, [(64, 27648), (64, 37376), (64, 37376)])):
    a = load(name)["cuda_arch"]
    expect(f"{name} arch", (a["name"], a["compute_capability"], a["source"], a["smem_per_block_bytes"]),
           (arch, cc, "--cuda-arch", smem))
    expect(f"{name} attention", (a["attention"]["head_dim"], a["attention"]["dtype"], a["attention"]["tensor_cores"]),
           (hd, dtype, tc))
    expect(f"{name} tiling", tiling(load(name)), want)
default = load("arch-default")["cuda_arch"]
if default["source"] == "assumed":
    expect("the arch assumed without a GPU", default["name"], "sm_90")
else:
    expect("the arch of this machine's GPU", default["source"], "this machine's GPU")
print(f"ok --cuda-arch: sm_86's fp32 attention at head dim 128 in {tiling(load('arch-86'))}; "
      f"without the flag {default['name']} ({default['source']})")
sys.exit(1 if failures else 0)
PY
