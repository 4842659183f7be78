#!/usr/bin/env python3
"""The hostile command-line table (issue 23): every line a command a careless or adversarial
user might type, the exit status it must end with and the message it must print (the flag
or key, the value and the rule). Each command must refuse within 10 s and 2 GiB of memory:
refusals come before work, not after a minute of it or an out-of-memory kill.

    check_hostile_cli.py TWINSIM SCENARIOS_DIR

Exit statuses: 2 a scenario or flag value twinsim refuses (ScenarioError), 1 another error
(a file that cannot be read or written), 105-108 CLI11's own (105 a flag's value, 106 a
missing subcommand, 107 a flag needing another, 108 flags excluding each other).
"""
import os
import pathlib
import resource
import stat
import subprocess
import sys
import tempfile
import time

TWINSIM, SCENARIOS = (os.path.abspath(a) for a in sys.argv[1:3])
LIMIT_S, LIMIT_BYTES = 10, 2 << 30

# (command line, exit status, the message's start, after "twinsim: error: ")
CASES = [
    ('simulate /nonexistent.yaml', 2, 'scenario=/nonexistent.yaml cannot be opened (no such file, or not readable)'),
    ('simulate /tmp', 2, 'scenario=/tmp is not a regular file (a directory, device or pipe)'),
    ('simulate /dev/zero', 2, 'scenario=/dev/zero is not a regular file (a directory, device or pipe)'),
    ('simulate /dev/null', 2, 'scenario=/dev/null is not a regular file (a directory, device or pipe)'),
    ('simulate DEF --fidelity medium', 105, '--fidelity: must be fast, full or full-per-rank'),
    ('simulate DEF --fidelity full --max-memory-gib 0', 105, '--max-memory-gib: 0 must be a finite number > 0 and <= 1e+06'),
    ('simulate DEF --max-memory-gib nan', 105, '--max-memory-gib: nan must be a finite number > 0 and <= 1e+06'),
    ('simulate DEF --max-memory-gib -3', 105, '--max-memory-gib: -3 must be a finite number > 0 and <= 1e+06'),
    ('simulate DEF --set plan.tp=nan', 2, 'plan.tp=nan must be an integer'),
    ('simulate DEF --set plan.tp=1.5', 2, 'plan.tp=1.5 must be an integer'),
    ('simulate DEF --set plan.tp=4abc', 2, 'plan.tp=4abc must be an integer'),
    ('simulate DEF --set plan.tp=-4', 2, 'plan.tp=-4 must be at least 1'),
    ('simulate DEF --set plan.tp=99999999999999999999', 2, 'plan.tp=99999999999999999999 is too large (at most 16777216)'),
    ('simulate DEF --set plan.tpp=4', 2, "plan.tpp: is not a known key, did you mean 'pp'?"),
    ('simulate DEF --set plan', 2, '--set=plan must have the form key=value, e.g. plan.tp=4'),
    ('simulate DEF --set =4', 2, '--set==4 must have the form key=value, e.g. plan.tp=4'),
    ('simulate DEF --set plan.tp=', 2, "--set=plan.tp= has no value after '=' (write plan.tp=null to reset the key to its default)"),
    ('simulate DEF --set training.seq_len=0', 2, 'training.seq_len=0 must be at least 1'),
    ('simulate DEF --set training.global_batch=1e9', 2, 'training.global_batch=1000000000 is not a multiple of training.micro_batch*plan.dp=12'),
    ('simulate DEF --set training.precision=fp7', 2, "training.precision=fp7 is not one of fp32 | fp16 | bf16 | fp8 | nvfp4 | mxfp4, did you mean 'fp8'?"),
    ('simulate DEF --set model.layers=1000000', 2, 'the step graph would hold about 1.02e+09 tasks (152.6 GiB), more than the budget: sim'),
    ('simulate DEF --set cluster.nodes=0', 2, 'cluster.nodes=0 must be at least 1'),
    ('simulate DEF --set plan.zero=4', 2, 'plan.zero=4 is too large (at most 3)'),
    ('simulate DEF --set plan.zero=true', 2, 'plan.zero=true must be an integer'),
    ('simulate DEF --set plan.schedule=zigzag', 2, 'plan.schedule=zigzag is not one of gpipe | 1f1b | interleaved'),
    ('simulate DEF --set plan.recompute=partial', 2, 'plan.recompute=partial is not one of none | selective | full'),
    ('simulate DEF --set training.micro_batch=3', 2, 'training.global_batch=1536 is not a multiple of training.micro_batch*plan.dp=36'),
    ('simulate DEF --trace /nonexistent/dir/t.json', 1, "cannot write '/nonexistent/dir/t.json': cannot create /nonexistent/dir/t.json.tmp."),
    ('memory DEF --set plan.pp=0', 2, 'plan.pp=0 must be at least 1'),
    ('memory DEF --set model=nosuchmodel', 2, 'model=nosuchmodel is not a model in the catalog'),
    ('memory DEF --set cluster=nosuchcluster', 2, 'cluster=nosuchcluster is not a node type in the catalog'),
    ('collective --op allreduse', 105, "--op: unknown collective 'allreduse'"),
    ('collective --ranks 0', 105, '--ranks: 0 must be a whole number from 1 to 16777216'),
    ('collective --ranks 1000000000', 105, '--ranks: 1000000000 must be a whole number from 1 to 16777216'),
    ('collective --min-bytes 0', 2, '--min-bytes=0 must be at least 1 byte'),
    ('collective --min-bytes 1000 --max-bytes 10', 2, '--max-bytes=10 is below --min-bytes=1000: the sweep runs from min to max'),
    ('collective --factor 1', 105, '--factor: 1 must be a finite number >= 1.0001 and <= 1024'),
    ('collective --factor nan', 105, '--factor: nan must be a finite number >= 1.0001 and <= 1024'),
    ('collective --cluster nosuch', 2, 'cluster=nosuch is not a node type in the catalog'),
    ('collective --max-bytes 1e30', 105, '--max-bytes: Value 1e30 could not be converted to UINT'),
    ('serve INF --rate 1e-308', 105, '--rate: 1e-308 must be a finite number >= 1e-06 and <= 1e+09'),
    ('capacity --model llama3-8b --gpu h100-sxm --serve --rate 1e-308 --ttft-p99 2', 105, '--rate: 1e-308 must be a finite number >= 1e-06 and <= 1e+09'),
    ('serve INF --router random', 2, '--router=random must be round_robin or least_loaded'),
    ('serve INF --swap-space -1', 105, '--swap-space: -1 must be a finite number >= 0 and <= 1e+06'),
    ('serve INF --swap-space 100000 --requests 3', 2, "GiB exceeds this GPU's share of the host's memory"),
    ('serve INF --requests 0', 105, '--requests: 0 must be a whole number from 1 to 10000000'),
    ('serve INF --requests -5', 105, '--requests: -5 must be a whole number from 1 to 10000000'),
    ('serve INF --rate 0', 105, '--rate: 0 must be a finite number >= 1e-06 and <= 1e+09'),
    # `--rate inf` is an offline benchmark (every request at t = 0); -inf and nan stay refused
    ('serve INF --rate -inf', 105, '--rate: -inf must be a finite number >= 1e-06 and <= 1e+09'),
    ('serve INF --rate nan', 105, '--rate: nan must be a finite number >= 1e-06 and <= 1e+09'),
    ('serve INF --requests 100 --trace-file /nonexistent/x.csv', 105, '--trace-file: File does not exist: /nonexistent/x.csv'),
    ('serve INF --trace-file /nonexistent.csv', 105, '--trace-file: File does not exist: /nonexistent.csv'),
    ('serve INF --block-size 0', 105, '--block-size: 0 must be a whole number from 1 to 65536'),
    ('serve INF --gpu-memory-utilization 1.5', 105, '--gpu-memory-utilization: 1.5 must be a finite number >= 0.01 and <= 1'),
    ('serve INF --gpu-memory-utilization 0', 105, '--gpu-memory-utilization: 0 must be a finite number >= 0.01 and <= 1'),
    ('serve INF --max-num-seqs 0', 105, '--max-num-seqs: 0 must be a whole number from 1 to 1000000'),
    ('serve INF --max-num-batched-tokens 0', 105, '--max-num-batched-tokens: 0 must be a whole number from 1 to 16777216'),
    ('serve INF --prefix-hit-rate 0.5', 107, '--prefix-hit-rate requires --prefix-tokens'),
    ('serve INF --prefix-tokens 16 --prefix-hit-rate 2', 105, '--prefix-hit-rate: 2 must be a finite number >= 0 and <= 1'),
    ('serve INF --csv /nonexistent/dir/kv.csv', 1, "cannot write '/nonexistent/dir/kv.csv': cannot create /nonexistent/dir/kv.csv.tmp."),
    ('serve INF --requests 10000000', 2, '--max-sequence-steps=200000000 is below the 1290000000 sequence steps (output tokens and prefill chunks) the 10000000 requests need'),
    ('serve INF --max-sequence-steps -1', 105, '--max-sequence-steps: -1 must be a whole number from 0 to 9223372036854775807'),
    ('serve DEF', 2, 'inference: serve needs a scenario with an inference section'),
    ('search DEF --gpus 0', 105, '--gpus: 0 must be a whole number from 1 to 16777216'),
    ('search DEF --gpus -8', 105, '--gpus: -8 must be a whole number from 1 to 16777216'),
    ('search DEF --gpus 8 --gpus-range 8:16', 2, '--gpus-range=8:16 cannot be combined with --gpus'),
    ('search DEF --gpus-range 16:8', 2, '--gpus-range=16:8 must satisfy 1 <= A <= B <= 16777216'),
    ('search DEF --gpus-range 0:8', 2, '--gpus-range=0:8 must satisfy 1 <= A <= B <= 16777216'),
    ('search DEF --gpus-range 1.5:8.9', 2, '--gpus-range=1.5:8.9 must be A:B with whole numbers, e.g. 8:1024'),
    ('search DEF --objective fastest', 2, '--objective=fastest must be step_time, cost or tokens_per_s'),
    ('search DEF --top 0', 105, '--top: 0 must be a whole number from 1 to 10000'),
    ('search DEF --recompute-mix --gpus 8', 108, '--gpus excludes --recompute-mix'),
    ('search DEF --memory-budget-gib -1', 105, '--memory-budget-gib: -1 must be a finite number > 0 and <= 1e+06'),
    ('search DEF --memory-budget-gib nan', 105, '--memory-budget-gib: nan must be a finite number > 0 and <= 1e+06'),
    ('search DEF --max-micro-batch 0', 105, '--max-micro-batch: 0 must be a whole number from 1 to 64'),
    ('search DEF --csv /nonexistent/dir/x.csv', 1, "cannot write '/nonexistent/dir/x.csv': cannot create /nonexistent/dir/x.csv.tmp."),
    ('search DEF --max-plans 1000', 2, '--max-plans=1000 is below the plans of this search space'),
    ('search DEF --max-plans -1', 105, '--max-plans: -1 must be a whole number from 0 to 9223372036854775807'),
    ('search INF', 2, 'training: search needs a scenario with a training section'),
    ('capacity --model llama3-8b --gpu h100-sxm', 2, '--tokens/--days: are required for training capacity (or give --serve)'),
    ('capacity --model llama3-8b --gpu h100-sxm --tokens 0', 105, '--tokens: 0 must be a finite number > 0 and <= 1e+18'),
    ('capacity --model llama3-8b --gpu h100-sxm --tokens nan --days 10', 105, '--tokens: nan must be a finite number > 0 and <= 1e+18'),
    ('capacity --model llama3-8b --gpu h100-sxm --tokens 1e12 --days 0', 105, '--days: 0 must be a finite number > 0 and <= 36500'),
    ('capacity --model llama3-8b --gpu h100-sxm --tokens 1e12 --days -1', 105, '--days: -1 must be a finite number > 0 and <= 36500'),
    ('capacity --model llama3-8b --gpu nosuchgpu --tokens 1e12 --days 10', 2, 'cluster.gpu=nosuchgpu is not a GPU in the catalog'),
    ('capacity --model nosuch --gpu h100-sxm --tokens 1e12 --days 10', 2, 'model=nosuch is not a model in the catalog'),
    ('capacity --model llama3-8b --gpu h100-sxm --tokens 1e12 --days 10 --max-gpus 0', 105, '--max-gpus: 0 must be a whole number from 1 to 16777216'),
    ('capacity --model llama3-8b --gpu h100-sxm --serve --tokens 1e12', 108, '--tokens excludes --serve'),
    ('capacity --model llama3-8b --gpu h100-sxm --rate 5', 107, '--rate requires --serve'),
    ('capacity --model llama3-8b --gpu h100-sxm --serve --rate -1', 105, '--rate: -1 must be a finite number >= 1e-06 and <= 1e+09'),
    ('capacity --model llama3-8b --gpu h100-sxm --tokens 1e12 --days 10 --price-per-gpu-hour -2', 105, '--price-per-gpu-hour: -2 must be a finite number >= 0 and <= 1e+09'),
    ('compare DEF DEF --labels x', 2, '--labels: takes two names, e.g. --labels after,before'),
    ('compare /nonexistent-a.json /nonexistent-b.json', 1, 'cannot read /nonexistent-b.json'),
    ('compare DEF DEF', 1, '{DEF}: not JSON: [json.exception.parse_error.101] parse error at line 1, column 1: syntax error while parsing '),
    ('compare /dev/zero /dev/zero', 1, '/dev/zero: not JSON: [json.exception.parse_error.101] parse error at line 1, column 1: syntax error while pars'),
    ('validate-csv /nonexistent.csv', 1, '/nonexistent.csv: cannot open'),
    ('validate-csv /dev/null', 1, '/dev/null: no data rows'),
    ('validate-csv CSV --cluster nosuch', 2, '--cluster=nosuch is not a node type in the catalog'),
    ('validate-csv CSV --write-calibration x.yaml', 107, '--write-calibration requires --fit-half'),
    ('validate-csv CSV --fit-half third', 105, '--fit-half: third not in {even,odd}'),
    ('validate-csv CSV --fit-stride 0', 105, '--fit-stride: 0 must be a whole number from 1 to 1000000'),
    ('fit-gemm /nonexistent.csv --gpu a100-sxm-80gb', 1, '/nonexistent.csv: cannot open'),
    ('fit-gemm GEMM --gpu nosuch', 2, 'cluster.gpu=nosuch is not a GPU in the catalog'),
    ('fit-gemm GEMM --gpu a100-sxm-80gb --dtype int3', 1, '--dtype int3 is not a math type'),
    ('fit-gemm GEMM GEMM --gpu a100-sxm-80gb --dtype fp16 --device A --device B --device C', 1,
     '3 device filters for 2 files'),
    ('describe-model nosuchmodel', 2, 'model=nosuchmodel is not a model in the catalog'),
    ('describe-model /dev/zero', 2, 'model.hf_config=/dev/zero is not a regular file (a directory, device or pipe)'),
    ('describe-model /tmp', 2, 'model.hf_config=/tmp is not a regular file (a directory, device or pipe)'),
    ('checkpoint', 106, 'A subcommand is required'),
    ('checkpoint merge DEF --checkpoint-dir /nonexistent --out /nonexistent/dir/m.safetensors', 1, "cannot write '/nonexistent/dir/m.safetensors': cannot create /nonexistent/dir/m.safetensors.tmp."),
    ('checkpoint merge DEF --checkpoint-dir /nonexistent --out m.safetensors', 1, "no complete checkpoint in '/nonexistent' (/nonexistent/latest is missing or unreadable)"),
    ('checkpoint merge INF --checkpoint-dir /tmp --out m.safetensors', 2, "training: merges a training run's checkpoint: the scenario has no training section"),
    ('checkpoint merge DEF --checkpoint-dir /tmp --out m.safetensors --step -1', 105, '--step: -1 must be a whole number from 0 to 1073741824'),
    ('checkpoint merge DEF --checkpoint-dir /tmp --out m.safetensors --names hf', 105, '--names: hf not in {twinsim,huggingface}'),
    ('run DEF --steps 0', 105, '--steps: 0 must be a whole number from 1 to 1000000'),
    ('run DEF --steps -1', 105, '--steps: -1 must be a whole number from 1 to 1000000'),
    ('run DEF --lr nan', 105, '--lr: nan must be a finite number > 0 and <= 1000'),
    ('run DEF --lr -1', 105, '--lr: -1 must be a finite number > 0 and <= 1000'),
    ('run DEF --seed -1', 105, '--seed: -1 must be a whole number from 0 to 9223372036854775807'),
    ('run DEF --memory-limit 0', 105, '--memory-limit: 0 must be a whole number from 1 to 1152921504606846976'),
    ('run DEF --keep 0', 105, '--keep: 0 must be a whole number from 1 to 1000000'),
    ('run DEF --device tpu', 105, '--device: tpu not in {cpu,cuda}'),
    ('run DEF --watchdog-timeout -1', 105, '--watchdog-timeout: -1 must be a finite number >= 0 and <= 1e+06'),
    ('run DEF --watchdog-timeout inf', 105, '--watchdog-timeout: inf must be a finite number >= 0 and <= 1e+06'),
    ('run DEF --metrics-port 0', 105, '--metrics-port: 0 must be a whole number from 1 to 65535'),
    ('run DEF --metrics-port 8080.5', 105, '--metrics-port: 8080.5 must be a whole number from 1 to 65535'),
    ('nosuchcommand', 2, "'nosuchcommand' is not a command of twinsim; commands: simulate, memory, collective, calibrate, compare, valid"),
    ('simulate DUP_YAML', 2, 'model: is given twice in one mapping'),
    ('simulate DUP_JSON', 2, 'model: is given twice in one mapping'),
    ('simulate DEEP', 2, 'deep.yaml: line 1, column'),
    ('simulate DEEP', 2, 'nests deeper than 32 levels'),
    ('simulate BIG', 2, 'scenario=big.yaml is 17000000 bytes; a scenario file is at most 16 MiB'),
    ('simulate BIN', 2, 'scenario=\\xe6\\x88\\x80\\xe6\\x91\\xa1 must be a mapping of keys to values'),
    ('simulate EMPTY', 2, 'model: is required'),
    ('simulate LIST', 2, 'scenario=[1] must be a mapping of keys to values'),
    ('simulate STAGES', 2, 'plan.stage_layers[0]=4294967296 is too large (at most 1048576)'),
    ('describe-model DUP_JSON', 2, 'model.hf_config(dup.json).model_type: is required'),
    ('run DEF --set plan.tp=1 --set plan.pp=1 --set plan.dp=1 --set cluster.nodes=1 --resume --checkpoint-dir CKPT', 2, "plan.dp=1 gives a world size tp*pp*cp*dp=1 that does not match the cluster's 1 nodes x 8 GPUs = 8"),
    # issue 58 (hostile input, round three)
    ('simulate BOMB', 2, 'bomb.yaml: line 10, column 10: its aliases expand to more than 100000 nodes (a YAML alias bomb?)'),
    ('simulate LISTKEY', 2, 'listkey.yaml: line 5, column 1: a mapping key must be a name, not a list, a mapping or empty'),
    ('simulate /proc/self/mem', 2, 'scenario=/proc/self/mem cannot be read (Input/output error)'),
    ('simulate EMPTY_ARG', 105, 'scenario: an empty path names no file (leave it out for the built-in default)'),
    ('simulate DEF --json=3', 114, 'json was given a disallowed flag override'),
    ('simulate DEF --set training.global_batch=1099511627776 --set training.seq_len=16384', 2,
     'training.global_batch=1099511627776 x training.seq_len=16384: make 1.8e+16 tokens per step, more than 2^53'),
    ('simulate DEF --set training.global_batch=96 --trace FOLDER', 1, "cannot write 'folder': it is a folder; an output is a regular file, a new path"),
    ('simulate DEF --set training.global_batch=96 --trace FIFO', 1, "cannot write 'fifo': it is a FIFO and no process reads it"),
    ('simulate DEF --set training.global_batch=96 --trace NULLDEV', 0, ''),
    ('search DEF --gpus 8 --memory-budget-gib 1 --analytic-only', 0, 'no plan fits'),
    ('search DEF --gpus 10000000 --analytic-only', 2, '--gpus=10000000 admits no plan: no tp x pp x cp x dp of that many GPUs'),
    ('describe-model missing/config.json', 2, 'model.hf_config=missing/config.json is missing: no such file'),
    ('fit-network NCCL_BAD --cluster dgx-h100 --ranks 16', 1, "nccl_bad.csv:2, column 1 (size_bytes): '1048576abc' is not a number"),
    ('fit-network NCCL_DUP --cluster dgx-h100 --ranks 16', 1, 'nccl_dup.csv:3: size_bytes=1048576 is given twice (line 2 too)'),
    ('fit-network NCCL_NEG --cluster dgx-h100 --ranks 16', 1, "nccl_neg.csv:2, column 2 (oop_time_us): '-5' must be above 0"),
    ('fit-network NCCL_DUP --cluster dgx-h100 --ranks 16 --latency-bytes 1e3:4096', 2, '--latency-bytes=1e3:4096 must be A:B with whole numbers'),
    ('validate-csv VTRAIN_BIG', 1, "vtrain_big.csv:2: column 'sequence length' = '99999999999999999999' is too large (at most 2147483647)"),
    ('run DEF --out AFILE', 1, '--out afile: is not a folder (it receives measured.json, trace.json and metrics/)'),
    ('checkpoint nosuch', 2, "'nosuch' is not a command of twinsim checkpoint; commands: merge"),
    ('run DEF --set plan.tp=1 --set plan.pp=1 --set plan.dp=1 --set cluster=host --set model=tiny-gpt --set training.seq_len=32 --set training.global_batch=4 --set training.micro_batch=1 --keep 3', 107, '--keep requires --checkpoint-dir'),
    # a flag that acts on the checkpoint folder needs it (CLI11's "requires": 107), before any work
    ('run DEF --resume', 107, '--resume requires --checkpoint-dir'),
    ('run DEF --save-initial', 107, '--save-initial requires --checkpoint-dir'),
    # live metrics are a training run's; a served scenario refuses the flag (a refused flag value: 2)
    ('run EXEC_INF --set plan.tp=1 --metrics-port 9400', 2, '--metrics-port=9400 applies to training runs (an inference run is one static batch)'),
    # what the executor does not run is a refused scenario key (exec validate): status 2
    ('run DEF --set plan.tp=1 --set plan.pp=1 --set plan.dp=1 --set cluster=host --set model=tiny-gpt --set training.seq_len=32 --set training.global_batch=4 --set training.micro_batch=1 --set training.precision=bf16 --set plan.zero=1 --set plan.exp_avg_dtype=bf16', 2, "plan.exp_avg_dtype=bf16 is not run by the executor: it keeps Adam's moments and masters in fp32"),
    ('run EXEC_INF --set plan.tp=1 --set inference.weight_dtype=fp8', 2, 'inference.weight_dtype=fp8 is not served by the executor (fp32, bf16, fp16)'),
]


def hostile_files(folder):
    """Scenario and config files no one should feed twinsim, by the names the table uses."""
    f = pathlib.Path(folder)
    base = "cluster: dgx-h100\ntraining: {seq_len: 2048, global_batch: 8}\n"
    (f / "dup.yaml").write_text("model: llama3-8b\nmodel: llama3-70b\n" + base + "plan: {tp: 8}\n")
    (f / "dup.json").write_text('{"model": "llama3-8b", "model": "llama3-70b"}\n')
    (f / "deep.yaml").write_text("a: " + "[" * 100000 + "\n")
    with open(f / "big.yaml", "wb") as out:  # 17,000,000 bytes: over the 16 MiB limit
        out.write(b" " * 17_000_000)
    (f / "bin.yaml").write_bytes(b"\xff\xfe\x00bad")
    (f / "empty.yaml").write_text("")
    (f / "list.yaml").write_text("- 1\n")
    (f / "st.yaml").write_text("model: llama3-8b\n" + base + "plan: {tp: 8, pp: 2, stage_layers: [4294967296, 0]}\n")
    laughs = ['l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]']
    laughs += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 9)]
    (f / "bomb.yaml").write_text("model: llama3-8b\n" + base + "plan: {tp: 8}\n" + "\n".join(laughs) + "\n")
    (f / "listkey.yaml").write_text("model: llama3-8b\n" + base + "plan: {tp: 8}\n[x]: 1\n")
    (f / "folder").mkdir()
    os.mkfifo(f / "fifo")
    try:  # a private /dev/null (char 1:3), never the system's: mknod needs root
        os.mknod(f / "nulldev", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        (f / "nulldev").write_text("")  # not root: a regular file stands in
    (f / "afile").write_text("not a folder\n")
    (f / "nccl_bad.csv").write_text("size_bytes,oop_time_us\n1048576abc,100\n")
    (f / "nccl_dup.csv").write_text("size_bytes,oop_time_us\n1048576,100\n1048576,100\n")
    (f / "nccl_neg.csv").write_text("size_bytes,oop_time_us\n1048576,-5\n")
    (f / "vtrain_big.csv").write_text("GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
                                      "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)\n"
                                      "2,16,8,1024,16,24,99999999999999999999,1,1,2,3\n")


def main():
    validation = pathlib.Path(SCENARIOS, "validation")
    gemm = next((validation / "microbench").glob("gemm_cublaslt*.csv"))
    names = {"DEF": os.path.join(SCENARIOS, "default.yaml"),
             "INF": os.path.join(SCENARIOS, "inference", "llama2-7b-a100.yaml"),
             "EXEC_INF": os.path.join(SCENARIOS, "exec", "tiny-llama-infer-tp2.yaml"),
             "CSV": str(validation / "vtrain" / "vtrain_single_node_a100.csv"), "GEMM": str(gemm),
             "DUP_YAML": "dup.yaml", "DUP_JSON": "dup.json", "DEEP": "deep.yaml", "BIG": "big.yaml",
             "BIN": "bin.yaml", "EMPTY": "empty.yaml", "LIST": "list.yaml", "STAGES": "st.yaml",
             "BOMB": "bomb.yaml", "LISTKEY": "listkey.yaml", "EMPTY_ARG": "", "FOLDER": "folder", "FIFO": "fifo",
             "NULLDEV": "nulldev", "AFILE": "afile", "NCCL_BAD": "nccl_bad.csv", "NCCL_DUP": "nccl_dup.csv",
             "NCCL_NEG": "nccl_neg.csv", "VTRAIN_BIG": "vtrain_big.csv"}
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        hostile_files(folder)
        for line, status, message in CASES:
            argv = [TWINSIM] + [names.get(word, word) for word in line.split()]
            start = time.monotonic()
            try:
                p = subprocess.run(argv, capture_output=True, text=True, timeout=LIMIT_S, cwd=folder,
                                   env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
            except subprocess.TimeoutExpired:
                failures.append(f"{line}: still running after {LIMIT_S} s")
                continue
            seconds = time.monotonic() - start
            # the largest resident set of any child so far (kilobytes on Linux): each case's
            # own stays below the limit when the running maximum does
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
            output = p.stdout + p.stderr
            expected = message.replace("{DEF}", names["DEF"]).replace("{INF}", names["INF"])
            if p.returncode != status:
                failures.append(f"{line}: exit {p.returncode}, expected {status}\n{output}")
            elif expected not in output:
                failures.append(f"{line}: expected the message\n  {expected}\ngot\n{output}")
            elif peak > LIMIT_BYTES:
                failures.append(f"{line}: the peak resident memory of the children reached {peak} bytes")
            else:
                print(f"ok {seconds:5.2f} s  {line}")
        # no output replaced the device node, the FIFO or the folder with a regular file
        for name, kind in (("fifo", stat.S_ISFIFO), ("folder", stat.S_ISDIR)) + ((("nulldev", stat.S_ISCHR),) if os.geteuid() == 0 else ()):
            if not kind(os.stat(pathlib.Path(folder, name)).st_mode):
                failures.append(f"{name}: was replaced by an output")
    print(f"{len(CASES) - len(failures)} of {len(CASES)} hostile command lines refused as they should be")
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
