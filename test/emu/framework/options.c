/* prophet-emu command line: parsing, validation and the --help text. */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "prophet_cli.h"

#define PROG "prophet-emu"

static const char usage_text[] =
    "NAME\n"
    "    prophet-emu - emulate a data-parallel training job on the emulated GPU cluster\n"
    "\n"
    "SYNOPSIS\n"
    "    prophet-emu --ranks N --profile FILE --mode per-tensor|ddp|horovod --iters K [OPTION]...\n"
    "    prophet-emu --help\n"
    "\n"
    "DESCRIPTION\n"
    "    Runs N rank processes that train the model described by a prophet-profile/1 file\n"
    "    (gradients in backward order with their sizes and ready times) on the emulated CUDA\n"
    "    driver (libcuda.so.1) and the emulated NCCL (libnccl.so.2). Each rank computes forward\n"
    "    and backward as emulated kernels that last as long as the profile says, writes every\n"
    "    gradient with deterministic small integers, and all-reduces the gradients the way the\n"
    "    chosen framework does. Every all-reduced element is checked exactly against the sum\n"
    "    over ranks. Nothing but the public CUDA driver and NCCL APIs is used, so an LD_PRELOAD\n"
    "    NCCL interposer (libprophet.so) can be tested end to end without a GPU.\n"
    "\n"
    "MODEL\n"
    "    The parent reads the profile, forks the N ranks (before any CUDA call and before any\n"
    "    thread exists), then calls ncclGetUniqueId and hands the id to the ranks. Rank r:\n"
    "    cuInit, primary context of device r mod count, a compute stream, ncclCommInitRank,\n"
    "    one device buffer per gradient. Per iteration:\n"
    "      forward   one kernel per layer in forward order (reverse of backward order);\n"
    "                forward_us is split over the layers like the backward gaps.\n"
    "      backward  for gradient g in backward order a kernel that ends at ready_us[g] after\n"
    "                backward start and then writes g's values f(seed, rank, iteration, g, i)\n"
    "                in [-8, 8], so fp32 sums are exact; then the framework's all-reduces:\n"
    "      per-tensor  one ncclAllReduce(sum) per gradient on a process-group stream that first\n"
    "                waits on the compute stream (cuEventRecord + cuStreamWaitEvent); an end\n"
    "                event is recorded on that stream right after the call.\n"
    "      ddp       PyTorch DDP: buckets (first --first-bucket-mb, then --bucket-mb; a bucket\n"
    "                closes when it reaches its limit). Iteration 0 buckets follow the reverse\n"
    "                of parameter order (descending priority); from iteration 1 on they are\n"
    "                rebuilt in the order the gradients became ready. Each gradient is copied\n"
    "                into its bucket on the compute stream; a full bucket is all-reduced on the\n"
    "                process-group stream (after an event wait), in bucket order; at the end of\n"
    "                backward the compute stream waits on the end events and copies back.\n"
    "      per-param-sync  PyTorch's dist.all_reduce(grad) in a loop after backward: per\n"
    "                gradient the process-group stream waits on the compute stream's event, the\n"
    "                call, the end events, then the compute stream waits on the end event;\n"
    "                --current-stream: the calls go on the compute stream itself (PyTorch\n"
    "                2.8's async_op=False); --scale-each: a kernel on the compute stream\n"
    "                multiplies each result by 1/ranks right after its call (the check expects\n"
    "                the same fp32 product).\n"
    "    The PyTorch-like modes (per-tensor, ddp, per-param-sync) record two events on the\n"
    "    process-group stream after each call (the work's end event and the future's event;\n"
    "    DDP's copy-back waits on the future's) and take event handles from a cache, as\n"
    "    PyTorch does.\n"
    "      horovod   a background thread per rank runs Horovod's cycle every --cycle-ms: a\n"
    "                coordinator (rank 0, through shared memory) takes the tensors that are\n"
    "                ready on every rank, fuses them in order up to --fusion-mb, and every rank\n"
    "                copies them into its fusion buffer, issues one ncclAllReduce and copies\n"
    "                out on its Horovod stream; a tensor above the threshold goes alone.\n"
    "    --wait all: the next forward waits for every all-reduce; the host synchronises and\n"
    "    checks all gradients at the end of each iteration. --wait per-layer: layer i's forward\n"
    "    kernel waits only on the all-reduce of gradient i and checks it when it runs. --wait\n"
    "    none: the same, but the host does not synchronise at the end of the iteration.\n"
    "    Training-loop extras: --loss-every, --eval-every, --tp-comm, --accumulate.\n"
    "\n"
    "OPTIONS\n"
    "    --ranks N            number of rank processes, 1..64 (required)\n"
    "    --profile FILE       prophet-profile/1 JSON file, e.g. profiles/resnet50.json (required)\n"
    "    --mode MODE          per-tensor | ddp | horovod | per-param-sync (required)\n"
    "    --cuda-api API       runtime | driver (default runtime): every CUDA call of the\n"
    "                         framework goes through the emulated libcudart.so.13 (which takes\n"
    "                         its driver entry points from cuGetProcAddress, as PyTorch's\n"
    "                         runtime does) or the linked libcuda.so.1 symbols. Kernels are\n"
    "                         cuLaunchKernel on emulated CUfunctions either way.\n"
    "    --current-stream     per-param-sync: the calls go on the compute stream\n"
    "    --scale-each         per-param-sync: scale each result by 1/ranks on the compute\n"
    "                         stream right after its call\n"
    "    --unhooked-consumer  per-param-sync: a kernel on the compute stream reads and checks "
    "each\n"
    "                         result right after its call, launched through emuLaunchKernel, an\n"
    "                         emulator entry point that no interposer wraps (a consumer the\n"
    "                         preload cannot see: the check must then fail, not pass silently)\n"
    "    --consumer NAME[,NAME...]  per-param-sync and per-tensor, --wait all (repeatable):\n"
    "                         after every fourth gradient's call (g mod 4 = 0) an adversarial\n"
    "                         consumer reads the gradient through one path and checks every\n"
    "                         element:\n"
    "                           ctx-record    cuCtxRecordEvent(E); a side stream waits on E\n"
    "                           ctx-wait      cuEventRecord(E) on the call's stream, then\n"
    "                                         cuCtxWaitEvent(ctx, E); the check on a side stream\n"
    "                           launch-event  a cuLaunchKernelEx on the call's stream whose\n"
    "                                         LAUNCH_COMPLETION_EVENT (PROGRAMMATIC_EVENT on odd\n"
    "                                         iterations) records E; a side stream waits on E\n"
    "                           graph-wait    E recorded on the call's stream; a graph [event-\n"
    "                                         wait node E, host node that checks] launched on a\n"
    "                                         side stream\n"
    "                           ipc           an interprocess event recorded on the call's\n"
    "                                         stream and the gradient's cuIpcGetMemHandle go to a\n"
    "                                         consumer process (needs EMU_CUDA_IPC_MEM=1), which\n"
    "                                         waits on the event, copies the gradient and sends\n"
    "                                         it back to be checked\n"
    "                         The checks run unseen by an interposer (emuLaunchKernel, a host\n"
    "                         node): only the path orders them. A rank fails when a consumer\n"
    "                         never began while an interposer held calls, although it held some.\n"
    "    --watchdog-us N      a thread per rank queries (cuEventQuery) the end events of the\n"
    "                         issued all-reduces every N us, as PyTorch's watchdog does "
    "(10..1e6);\n"
    "                         its query count is printed at the end\n"
    "    --iters K            measured iterations, 1..100000 (required)\n"
    "    --warmup W           iterations run before the measured ones (default 1). Iterations\n"
    "                         are numbered from 0 including warm-up ones.\n"
    "    --json OUT           write a JSON summary object to OUT ('-' = stdout; the summary\n"
    "                         line then goes to stderr)\n"
    "    --wait all|per-layer|none  what the next iteration's forward waits for (default all).\n"
    "                         none: as per-layer (layer i's kernel waits for gradient i's\n"
    "                         all-reduce and checks it), but no host synchronisation at the end\n"
    "                         of an iteration: the host runs ahead of the GPU, as PyTorch does\n"
    "                         when nothing calls .item(), until the emulated driver's bounded\n"
    "                         stream queue (EMU_CUDA_QUEUE_DEPTH) blocks a launch; everything is\n"
    "                         drained and checked after the last iteration\n"
    "    --loss-every K       at the end of every K-th iteration (iterations K-1, 2K-1, ...,\n"
    "                         after its gradient all-reduces were issued) a loss all-reduce: a\n"
    "                         kernel on the compute stream writes the rank's loss, the gradients'\n"
    "                         process-group stream waits for it (event), one 1-element fp32\n"
    "                         ncclAllReduce(sum) on the gradients' communicator and that stream,\n"
    "                         then cuStreamSynchronize of that stream (loss.item()) and an exact\n"
    "                         check of the sum, 1..100000 (default off)\n"
    "    --eval-every K       after every K-th iteration an evaluation phase: kernels write the\n"
    "                         metrics, then three all-reduces(sum) of 1 and 4 fp32 elements and\n"
    "                         of 2 ncclInt64 elements on the gradients' communicator and stream,\n"
    "                         cuStreamSynchronize of that stream and exact checks, 1..100000\n"
    "                         (default off)\n"
    "    --eval-calls N       the evaluation phase issues its three all-reduces N times, 1..64\n"
    "                         (default 1)\n"
    "    --tp-comm N          a second communicator, the tensor-parallel one (ncclCommSplit of\n"
    "                         the gradients' communicator, every rank in it): N fp32\n"
    "                         all-reduces(sum) per forward + backward pass, N/2 spread over the\n"
    "                         forward layers and the rest over the backward ones, each on the\n"
    "                         compute stream itself and read and checked by the next compute\n"
    "                         kernel (Megatron-style), 1..4096 (default off)\n"
    "    --tp-elements E      elements of each --tp-comm all-reduce, 1..4194304 (default 256)\n"
    "    --accumulate M       gradient accumulation: M forward + backward micro-steps per\n"
    "                         iteration; the first M-1 issue no all-reduce (DDP's no_sync()),\n"
    "                         the last one all-reduces as usual. Each micro-step writes other\n"
    "                         values; the last one's sums are checked, 1..64 (default 1)\n"
    "    --scale S            multiplies every modelled time: forward_us, backward_us, ready_us\n"
    "                         and --cycle-ms (default 1.0; 0 < S <= 1000). 0.05 turns\n"
    "                         ResNet-50's 99 ms iteration into about 5 ms of compute.\n"
    "    --elements-scale E   multiplies every tensor's element count (rounded, at least 1)\n"
    "                         and the byte thresholds --bucket-mb, --first-bucket-mb and\n"
    "                         --fusion-mb, so the number and grouping of the calls stay about\n"
    "                         the same while the bytes shrink (default 1.0; 0 < E <= 1).\n"
    "    --bucket-mb M        DDP bucket size in MiB (default 25)\n"
    "    --first-bucket-mb M  DDP first bucket size in MiB (default 1)\n"
    "    --bucket-view        DDP with gradient_as_bucket_view=True and a job that reads the\n"
    "                         gradients only after backward: every bucket's results are read\n"
    "                         (copied back) after the end event of the iteration's last bucket,\n"
    "                         not right after its own (default: DDP's copy-back per bucket)\n"
    "    --fusion-mb M        Horovod fusion threshold in MiB (default 64)\n"
    "    --cycle-ms C         Horovod cycle time in ms before --scale (default 1)\n"
    "    --host-sync-at G     after issuing the all-reduce that covers gradient index G (backward\n"
    "                         order, 0-based) the host calls cuStreamSynchronize on the NCCL "
    "stream,\n"
    "                         in every iteration, as a job that synchronises mid-backward does\n"
    "                         (default off)\n"
    "    --mismatch-rank R    rank R issues ncclBroadcast instead of the first all-reduce of\n"
    "                         iteration 1, so the collectives do not match; the run must fail\n"
    "                         (default off)\n"
    "    --corrupt-rank R     rank R adds 1 to the middle element of the middle gradient it\n"
    "                         produces in iteration 1 (iteration 0 when there is only one), so\n"
    "                         the ranks must report a wrong result: a test of the checker\n"
    "                         (default off)\n"
    "    --kill-rank R        rank R kills itself with SIGKILL in the middle of the backward\n"
    "                         pass of iteration --kill-at-iter (after issuing the all-reduces\n"
    "                         of the first half of the gradients): a fault test. The other\n"
    "                         ranks must then fail on their own (an NCCL error); the parent\n"
    "                         does not kill them after the usual 2 s grace but waits up to\n"
    "                         --timeout, prints how long each one took after the kill and\n"
    "                         puts it in the JSON (\"kill\"). Exit status 1 when every other\n"
    "                         rank failed, 3 when one hung until --timeout (default off)\n"
    "    --kill-at-iter I     the iteration of --kill-rank (default 1)\n"
    "    --bw-change-at I:MBIT  at the start of iteration I (warm-up included) every rank sets\n"
    "                         its emulated links to MBIT Mbit/s (emuNcclSetLinkBandwidth; 0:\n"
    "                         unpaced): a link that changes speed mid-run, at a point that does\n"
    "                         not depend on the machine's load\n"
    "    --kill-signal KILL|STOP  the signal of --kill-rank: KILL (the process dies and its\n"
    "                         sockets close) or STOP (it hangs with its sockets open, so the\n"
    "                         others can only notice by a timeout such as EMU_NCCL_TIMEOUT_MS;\n"
    "                         the parent kills it once every other rank has exited)\n"
    "                         (default KILL)\n"
    "    --change-at-iter I   per-tensor mode only: from iteration I on every rank stops\n"
    "                         all-reducing (and checking) the middle gradient (index n/2), as a\n"
    "                         job that freezes a layer does, so the call sequence changes in\n"
    "                         the middle of the run (default off)\n"
    "    --jitter-us J        before each all-reduce call the host sleeps a random time in\n"
    "                         [0, J] us, drawn from a generator seeded by --seed and the rank,\n"
    "                         so every rank's timing differs (default 0: off)\n"
    "    --local-event KIND,G,R[,K]  rank R (-1: every rank) makes a host event of its own right\n"
    "                         after the all-reduce that covers gradient G (backward order), in\n"
    "                         every K-th iteration (default 1), as one rank's host does alone:\n"
    "                           free      cuMemAlloc + cuMemFree of a 1 MiB scratch buffer (the\n"
    "                                     caching allocator freeing under memory pressure)\n"
    "                           ctx-sync  cuCtxSynchronize (a timer or a logger on one rank)\n"
    "                         repeatable, up to 8 (default off)\n"
    "    --chaos P            after each all-reduce, with probability P (0 < P <= 1, drawn per\n"
    "                         rank), one random local event of the calling thread: a free, a\n"
    "                         context synchronisation or a query of the call's end event; and a\n"
    "                         thread per rank that makes such events (frees, context\n"
    "                         synchronisations, queries of recent end events) at random times\n"
    "                         every 0.1-2 ms. Counts on stderr at the end (default off)\n"
    "    --poll-wait          per-tensor and per-param-sync: after each all-reduce the host\n"
    "                         waits for it by polling its end event with cuEventQuery, as\n"
    "                         TORCH_NCCL_BLOCKING_WAIT=1 and work.wait(timeout) do\n"
    "    --second-comm        per-param-sync: the odd gradients are all-reduced on a second\n"
    "                         communicator (ncclCommSplit of the first, every rank in it) and\n"
    "                         its own process-group stream, so that the compute stream is behind\n"
    "                         the held calls of two communicators at once\n"
    "    --extra-streams N    after each all-reduce, stream g mod N of N more streams waits on\n"
    "                         its end event and runs a kernel that reads it (a comm hook's or a\n"
    "                         side stream's consumer; per-tensor and per-param-sync check the\n"
    "                         gradient there), so that a job has more streams than\n"
    "                         CUDA_DEVICE_MAX_CONNECTIONS hardware queues, 1..32 (default off)\n"
    "    --rss W              sample each rank's resident memory (/proc/self/statm) and\n"
    "                         malloc's bytes in use (mallinfo2) after iteration W and after\n"
    "                         the last iteration (before teardown: no rank leaves before\n"
    "                         every rank took it); printed per rank and in the JSON (\"rss\")\n"
    "                         (default off)\n"
    "    --seed X             seed of the gradient values (default 1)\n"
    "    --timeout SEC        kill every rank and exit 3 if the run lasts longer (default 300)\n"
    "    --quiet              no summary line on stdout\n"
    "    --help               this text\n"
    "    --version            print the version and exit\n"
    "\n"
    "OUTPUT\n"
    "    A summary line on stdout (unless --quiet): mode, ranks, median and mean iteration time\n"
    "    on rank 0, the median of the per-iteration maximum over ranks, calls and bytes per\n"
    "    iteration. Iteration time is measured on each rank from the start of the iteration to\n"
    "    the host synchronisation at its end (--wait all: all results checked; per-layer: the\n"
    "    compute stream has finished backward); --wait none: from its start to the end of its\n"
    "    launches, i.e. the time between consecutive iteration starts on the host, which the\n"
    "    bounded driver queue paces at the GPU's rate in steady state (the final drain is\n"
    "    \"drain_us\"). At the end each rank prints, per communicator, the all-reduce and\n"
    "    broadcast calls that reached the emulated NCCL (in total and after the warm-up) and\n"
    "    those the job issued. --json OUT writes {\"mode\", \"ranks\", \"profile\",\n"
    "    \"iters\", \"warmup\", \"iteration_us\" (rank 0, measured iterations), "
    "\"iteration_max_us\",\n"
    "    \"median_us\", \"mean_us\", \"median_max_us\", \"calls_per_iter\", \"bytes_per_iter\" "
    "(last\n"
    "    iteration, rank 0), \"ok\"}, plus \"kill\" {\"rank\", \"iter\", \"survivor_exit_s\"\n"
    "    (per rank, -1 for the killed one), \"max_survivor_exit_s\", \"survivors_failed\"} with\n"
    "    --kill-rank and \"rss\" {\"at_iter\", \"warm_kb\", \"end_kb\", \"heap_warm_kb\",\n"
    "    \"heap_end_kb\" (per rank), \"max_heap_growth_kb\",\n"
    "    \"max_growth_kb\"} with --rss, \"max_run_ahead\" and \"drain_us\" (per rank), \"nccl\"\n"
    "    {\"grad\", \"tp\" (--tp-comm): {\"allreduce\", \"allreduce_after_warmup\", "
    "\"broadcast\",\n"
    "    \"broadcast_after_warmup\", \"job_allreduce\", \"job_broadcast\"} (per rank)} and "
    "\"extras\"\n"
    "    {the option values, \"loss_allreduces\", \"loss_checked\", \"eval_allreduces\",\n"
    "    \"eval_checked\", \"tp_allreduces\", \"tp_checked\", \"micro_steps\" (per rank)}.\n"
    "    Errors go to stderr, one line each, prefixed\n"
    "    'prophet-emu:' or 'prophet-emu: rank R:'; a wrong element is reported with rank,\n"
    "    iteration, gradient name, element index, expected and received values.\n"
    "\n"
    "EXIT STATUS\n"
    "    0  every rank finished and every all-reduced element was exact\n"
    "    1  a rank failed: wrong data, a CUDA or NCCL error (e.g. mismatched collectives), crash\n"
    "    2  bad option or unreadable profile (one line on stderr)\n"
    "    3  timeout: the ranks were killed after --timeout seconds\n"
    "\n"
    "ENVIRONMENT\n"
    "    Link or LD_LIBRARY_PATH must select the emulated libraries; prophet-emu carries an\n"
    "    RPATH to them: build/lib/emu in the build tree, LIBDIR/prophet/emu once installed (never\n"
    "    on the loader's own path, so a real GPU's libraries are untouched). prophet-run (or\n"
    "    LD_PRELOAD=libprophet.so) adds the interposer.\n"
    "    EMU_CUDA_QUEUE_DEPTH=D (emulated driver): a launch onto a stream that holds D pending\n"
    "    operations blocks the host until it finishes one (default 1024; 0: unbounded).\n"
    "\n"
    "EXAMPLES\n"
    "    prophet-run prophet-emu --ranks 4 --mode ddp --iters 50 --scale 0.5 --elements-scale 0.05 "
    "\\\n"
    "        --profile /usr/share/prophet/profiles/resnet50.json   # the demo job (.deb paths)\n"
    "    prophet-emu --ranks 4 --profile profiles/resnet50.json --mode ddp --iters 10\n"
    "    prophet-emu --ranks 8 --profile profiles/resnet50.json --mode horovod --iters 5 \\\n"
    "        --scale 0.05 --elements-scale 0.01 --json out.json\n"
    "    LD_PRELOAD=build/lib/libprophet.so prophet-emu --ranks 2 --mode per-tensor \\\n"
    "        --profile profiles/mobilenet_v2.json --iters 20 --wait per-layer --host-sync-at 40\n"
    "    prophet-emu --ranks 2 --profile profiles/resnet50.json --mode ddp --iters 20 \\\n"
    "        --wait none --loss-every 1 --eval-every 10 --tp-comm 4 --accumulate 2\n"
    "    prophet-emu --ranks 2 --profile profiles/vgg16.json --mode ddp --iters 3 \\\n"
    "        --mismatch-rank 1     # must fail with exit status 1\n";

void emu_options_usage(FILE *f)
{
    fputs(usage_text, f);
}

const char *emu_mode_name(enum emu_mode m)
{
    switch (m) {
    case EMU_MODE_PER_TENSOR:
        return "per-tensor";
    case EMU_MODE_DDP:
        return "ddp";
    case EMU_MODE_HOROVOD:
        return "horovod";
    case EMU_MODE_PER_PARAM_SYNC:
        return "per-param-sync";
    }
    return "?";
}

const char *emu_cuda_api_name(enum emu_cuda_api a)
{
    return a == EMU_CUDA_API_DRIVER ? "driver" : "runtime";
}

static const char *const consumer_names[EMU_CONSUMER_KINDS] = {
    [EMU_CONSUMER_CTX_RECORD] = "ctx-record",
    [EMU_CONSUMER_CTX_WAIT] = "ctx-wait",
    [EMU_CONSUMER_LAUNCH_EVENT] = "launch-event",
    [EMU_CONSUMER_GRAPH_WAIT] = "graph-wait",
    [EMU_CONSUMER_IPC] = "ipc",
};

const char *emu_consumer_name(enum emu_consumer_kind k)
{
    return (unsigned)k < EMU_CONSUMER_KINDS ? consumer_names[k] : "?";
}

const char *emu_wait_name(enum emu_wait w)
{
    switch (w) {
    case EMU_WAIT_ALL:
        return "all";
    case EMU_WAIT_PER_LAYER:
        return "per-layer";
    case EMU_WAIT_NONE:
        return "none";
    }
    return "?";
}

enum {
    OPT_RANKS = 256,
    OPT_PROFILE,
    OPT_MODE,
    OPT_ITERS,
    OPT_WARMUP,
    OPT_JSON,
    OPT_WAIT,
    OPT_SCALE,
    OPT_ELEMENTS_SCALE,
    OPT_BUCKET_MB,
    OPT_FIRST_BUCKET_MB,
    OPT_BUCKET_VIEW,
    OPT_FUSION_MB,
    OPT_CYCLE_MS,
    OPT_HOST_SYNC_AT,
    OPT_MISMATCH_RANK,
    OPT_CORRUPT_RANK,
    OPT_KILL_RANK,
    OPT_KILL_AT_ITER,
    OPT_BW_CHANGE_AT,
    OPT_KILL_SIGNAL,
    OPT_CHANGE_AT_ITER,
    OPT_JITTER_US,
    OPT_RSS,
    OPT_SEED,
    OPT_TIMEOUT,
    OPT_QUIET,
    OPT_CUDA_API,
    OPT_CURRENT_STREAM,
    OPT_SCALE_EACH,
    OPT_UNHOOKED_CONSUMER,
    OPT_CONSUMER,
    OPT_WATCHDOG_US,
    OPT_LOSS_EVERY,
    OPT_EVAL_EVERY,
    OPT_EVAL_CALLS,
    OPT_TP_COMM,
    OPT_TP_ELEMENTS,
    OPT_ACCUMULATE,
    OPT_LOCAL_EVENT,
    OPT_CHAOS,
    OPT_POLL_WAIT,
    OPT_EXTRA_STREAMS,
    OPT_SECOND_COMM,
    OPT_HELP,
    OPT_VERSION,
};

static const struct option long_opts[] = {
    {"ranks", required_argument, NULL, OPT_RANKS},
    {"profile", required_argument, NULL, OPT_PROFILE},
    {"mode", required_argument, NULL, OPT_MODE},
    {"iters", required_argument, NULL, OPT_ITERS},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"json", required_argument, NULL, OPT_JSON},
    {"wait", required_argument, NULL, OPT_WAIT},
    {"scale", required_argument, NULL, OPT_SCALE},
    {"elements-scale", required_argument, NULL, OPT_ELEMENTS_SCALE},
    {"bucket-mb", required_argument, NULL, OPT_BUCKET_MB},
    {"first-bucket-mb", required_argument, NULL, OPT_FIRST_BUCKET_MB},
    {"bucket-view", no_argument, NULL, OPT_BUCKET_VIEW},
    {"fusion-mb", required_argument, NULL, OPT_FUSION_MB},
    {"cycle-ms", required_argument, NULL, OPT_CYCLE_MS},
    {"host-sync-at", required_argument, NULL, OPT_HOST_SYNC_AT},
    {"mismatch-rank", required_argument, NULL, OPT_MISMATCH_RANK},
    {"corrupt-rank", required_argument, NULL, OPT_CORRUPT_RANK},
    {"kill-rank", required_argument, NULL, OPT_KILL_RANK},
    {"kill-at-iter", required_argument, NULL, OPT_KILL_AT_ITER},
    {"bw-change-at", required_argument, NULL, OPT_BW_CHANGE_AT},
    {"kill-signal", required_argument, NULL, OPT_KILL_SIGNAL},
    {"change-at-iter", required_argument, NULL, OPT_CHANGE_AT_ITER},
    {"jitter-us", required_argument, NULL, OPT_JITTER_US},
    {"rss", required_argument, NULL, OPT_RSS},
    {"seed", required_argument, NULL, OPT_SEED},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"cuda-api", required_argument, NULL, OPT_CUDA_API},
    {"current-stream", no_argument, NULL, OPT_CURRENT_STREAM},
    {"scale-each", no_argument, NULL, OPT_SCALE_EACH},
    {"unhooked-consumer", no_argument, NULL, OPT_UNHOOKED_CONSUMER},
    {"consumer", required_argument, NULL, OPT_CONSUMER},
    {"watchdog-us", required_argument, NULL, OPT_WATCHDOG_US},
    {"loss-every", required_argument, NULL, OPT_LOSS_EVERY},
    {"eval-every", required_argument, NULL, OPT_EVAL_EVERY},
    {"eval-calls", required_argument, NULL, OPT_EVAL_CALLS},
    {"tp-comm", required_argument, NULL, OPT_TP_COMM},
    {"tp-elements", required_argument, NULL, OPT_TP_ELEMENTS},
    {"accumulate", required_argument, NULL, OPT_ACCUMULATE},
    {"local-event", required_argument, NULL, OPT_LOCAL_EVENT},
    {"chaos", required_argument, NULL, OPT_CHAOS},
    {"poll-wait", no_argument, NULL, OPT_POLL_WAIT},
    {"extra-streams", required_argument, NULL, OPT_EXTRA_STREAMS},
    {"second-comm", no_argument, NULL, OPT_SECOND_COMM},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* --OPT: 'VAL' is not WHAT (tools/prophet_cli.h's usage error); returns 2 */
static int bad(const char *opt, const char *val, const char *what)
{
    char name[64];
    snprintf(name, sizeof(name), "--%s", opt);
    return prophet_cli_bad_value(PROG, name, val, what);
}

/* --consumer NAME[,NAME...]: adds each name's bit to o->consumers. */
static int parse_consumers(const char *opt, const char *arg, struct emu_options *o)
{
    static const char what[] = "a comma list of ctx-record, ctx-wait, launch-event, "
                               "graph-wait, ipc";
    const char *p = arg;

    for (;;) {
        size_t n = strcspn(p, ",");
        int k = 0;

        while (k < EMU_CONSUMER_KINDS &&
               (strlen(consumer_names[k]) != n || strncmp(p, consumer_names[k], n)))
            k++;
        if (k == EMU_CONSUMER_KINDS) /* an unknown or empty name */
            return bad(opt, arg, what);
        o->consumers |= 1u << k;
        p += n;
        if (!*p++)
            return 0;
    }
}

/* --local-event KIND,G,R[,K] */
static int parse_local_event(const char *opt, const char *arg, struct emu_options *o)
{
    static const char what[] = "KIND,G,R[,K] with KIND free or ctx-sync, G >= 0, R >= -1, "
                               "K >= 1, at most 8 times";
    struct emu_local_event *e = &o->local[o->nlocal];
    char kind[16];
    long g, rank, every = 1;
    int n = 0, used = 0;

    if (o->nlocal == EMU_MAX_LOCAL_EVENTS)
        return bad(opt, arg, what);
    n = sscanf(arg, "%15[a-z-],%ld,%ld%n,%ld%n", kind, &g, &rank, &used, &every, &used);
    if (n < 3 || arg[used] || g < 0 || rank < -1 || rank >= EMU_MAX_RANKS || every < 1 ||
        every > EMU_MAX_ITERS)
        return bad(opt, arg, what);
    if (!strcmp(kind, "free"))
        e->kind = EMU_LOCAL_FREE;
    else if (!strcmp(kind, "ctx-sync"))
        e->kind = EMU_LOCAL_CTX_SYNC;
    else
        return bad(opt, arg, what);
    e->grad = g;
    e->rank = (int)rank;
    e->every = (int)every;
    o->nlocal++;
    return 0;
}

/* --OPT's value S, a whole number in [lo, hi] (tools/prophet_cli.h's usage error); returns 2 */
static int parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char name[64];
    snprintf(name, sizeof(name), "--%s", opt);
    return prophet_cli_long_value(PROG, name, s, lo, hi, NULL, out);
}

/* --OPT's value S, a real number in (lo_excl, hi] */
static int parse_double(const char *opt, const char *s, double lo_excl, double hi, double *out)
{
    char name[64];
    snprintf(name, sizeof(name), "--%s", opt);
    return prophet_cli_double_value(PROG, name, s, lo_excl, hi, 1, NULL, out);
}

static void set_defaults(struct emu_options *o)
{
    memset(o, 0, sizeof(*o));
    o->ranks = 0;
    o->mode = -1;
    o->iters = 0;
    o->warmup = 1;
    o->wait = EMU_WAIT_ALL;
    o->scale = 1.0;
    o->elements_scale = 1.0;
    o->bucket_mb = 25.0;
    o->first_bucket_mb = 1.0;
    o->fusion_mb = 64.0;
    o->cycle_ms = 1.0;
    o->host_sync_at = -1;
    o->mismatch_rank = -1;
    o->corrupt_rank = -1;
    o->kill_rank = -1;
    o->kill_at_iter = 1;
    o->bw_change_iter = -1;
    o->kill_signal = SIGKILL;
    o->change_at_iter = -1;
    o->jitter_us = 0.0;
    o->rss_at = -1;
    o->seed = 1;
    o->timeout_s = 300.0;
    o->eval_calls = 0;  /* 0: not given; 1 after validation */
    o->tp_elements = 0; /* 0: not given; 256 after validation */
    o->accumulate = 1;
}

/* The training-loop extras: --loss-every, --eval-every, --eval-calls, --tp-comm, --tp-elements,
 * --accumulate. */
static int parse_extra(int c, const char *name, const char *arg, struct emu_options *o)
{
    long v;

    switch (c) {
    case OPT_LOSS_EVERY:
        if (parse_long(name, arg, 1, EMU_MAX_ITERS, &v))
            return 2;
        o->loss_every = (int)v;
        return 0;
    case OPT_EVAL_EVERY:
        if (parse_long(name, arg, 1, EMU_MAX_ITERS, &v))
            return 2;
        o->eval_every = (int)v;
        return 0;
    case OPT_EVAL_CALLS:
        if (parse_long(name, arg, 1, EMU_MAX_EVAL_CALLS, &v))
            return 2;
        o->eval_calls = (int)v;
        return 0;
    case OPT_TP_COMM:
        if (parse_long(name, arg, 1, EMU_MAX_TP_CALLS, &v))
            return 2;
        o->tp_comm = (int)v;
        return 0;
    case OPT_TP_ELEMENTS:
        return parse_long(name, arg, 1, EMU_MAX_TP_ELEMENTS, &o->tp_elements) ? 2 : 0;
    case OPT_ACCUMULATE:
        if (parse_long(name, arg, 1, EMU_MAX_ACCUMULATE, &v))
            return 2;
        o->accumulate = (int)v;
        return 0;
    }
    return 2;
}

static int parse_one(int c, const char *arg, struct emu_options *o)
{
    long v;
    const char *name = NULL;

    for (const struct option *p = long_opts; p->name; p++)
        if (p->val == c)
            name = p->name;

    switch (c) {
    case OPT_RANKS:
        if (parse_long(name, arg, 1, EMU_MAX_RANKS, &v))
            return 2;
        o->ranks = (int)v;
        return 0;
    case OPT_PROFILE:
        if (!*arg)
            return bad(name, arg, "a file name");
        o->profile = arg;
        return 0;
    case OPT_MODE:
        if (!strcmp(arg, "per-tensor"))
            o->mode = EMU_MODE_PER_TENSOR;
        else if (!strcmp(arg, "ddp"))
            o->mode = EMU_MODE_DDP;
        else if (!strcmp(arg, "horovod"))
            o->mode = EMU_MODE_HOROVOD;
        else if (!strcmp(arg, "per-param-sync"))
            o->mode = EMU_MODE_PER_PARAM_SYNC;
        else
            return bad(name, arg, "per-tensor, ddp, horovod or per-param-sync");
        return 0;
    case OPT_ITERS:
        if (parse_long(name, arg, 1, EMU_MAX_ITERS, &v))
            return 2;
        o->iters = (int)v;
        return 0;
    case OPT_WARMUP:
        if (parse_long(name, arg, 0, EMU_MAX_ITERS, &v))
            return 2;
        o->warmup = (int)v;
        return 0;
    case OPT_JSON:
        if (!*arg)
            return bad(name, arg, "a file name");
        o->json = arg;
        return 0;
    case OPT_WAIT:
        if (!strcmp(arg, "all"))
            o->wait = EMU_WAIT_ALL;
        else if (!strcmp(arg, "per-layer"))
            o->wait = EMU_WAIT_PER_LAYER;
        else if (!strcmp(arg, "none"))
            o->wait = EMU_WAIT_NONE;
        else
            return bad(name, arg, "all, per-layer or none");
        return 0;
    case OPT_SCALE:
        return parse_double(name, arg, 0.0, 1000.0, &o->scale) ? 2 : 0;
    case OPT_ELEMENTS_SCALE:
        return parse_double(name, arg, 0.0, 1.0, &o->elements_scale) ? 2 : 0;
    case OPT_BUCKET_MB:
        return parse_double(name, arg, 0.0, 65536.0, &o->bucket_mb) ? 2 : 0;
    case OPT_FIRST_BUCKET_MB:
        return parse_double(name, arg, 0.0, 65536.0, &o->first_bucket_mb) ? 2 : 0;
    case OPT_FUSION_MB:
        return parse_double(name, arg, 0.0, 65536.0, &o->fusion_mb) ? 2 : 0;
    case OPT_CYCLE_MS:
        return parse_double(name, arg, 0.0, 10000.0, &o->cycle_ms) ? 2 : 0;
    case OPT_HOST_SYNC_AT:
        if (parse_long(name, arg, 0, LONG_MAX, &v))
            return 2;
        o->host_sync_at = v;
        return 0;
    case OPT_MISMATCH_RANK:
        if (parse_long(name, arg, 0, EMU_MAX_RANKS - 1, &v))
            return 2;
        o->mismatch_rank = (int)v;
        return 0;
    case OPT_CORRUPT_RANK:
        if (parse_long(name, arg, 0, EMU_MAX_RANKS - 1, &v))
            return 2;
        o->corrupt_rank = (int)v;
        return 0;
    case OPT_KILL_RANK:
        if (parse_long(name, arg, 0, EMU_MAX_RANKS - 1, &v))
            return 2;
        o->kill_rank = (int)v;
        return 0;
    case OPT_BW_CHANGE_AT: {
        char *end;
        long it = strtol(arg, &end, 10);
        double mbit;
        if (end == arg || *end != ':' || it < 0 || it > INT_MAX) {
            return bad(name, arg, "ITER:MBIT, e.g. 120:250");
        }
        mbit = strtod(end + 1, &end);
        if (*end || !(mbit >= 0) || mbit > 1e7) {
            return bad(name, arg, "ITER:MBIT, e.g. 120:250");
        }
        o->bw_change_iter = (int)it;
        o->bw_change_Bps = mbit * 1e6 / 8;
        return 0;
    }
    case OPT_KILL_AT_ITER:
        if (parse_long(name, arg, 0, EMU_MAX_ITERS - 1, &v))
            return 2;
        o->kill_at_iter = (int)v;
        return 0;
    case OPT_KILL_SIGNAL:
        if (!strcmp(arg, "KILL"))
            o->kill_signal = SIGKILL;
        else if (!strcmp(arg, "STOP"))
            o->kill_signal = SIGSTOP;
        else
            return bad(name, arg, "KILL or STOP");
        return 0;
    case OPT_CHANGE_AT_ITER:
        if (parse_long(name, arg, 0, EMU_MAX_ITERS - 1, &v))
            return 2;
        o->change_at_iter = (int)v;
        return 0;
    case OPT_JITTER_US:
        if (!strcmp(arg, "0")) {
            o->jitter_us = 0.0;
            return 0;
        }
        return parse_double(name, arg, 0.0, 1000000.0, &o->jitter_us) ? 2 : 0;
    case OPT_RSS:
        if (parse_long(name, arg, 0, EMU_MAX_ITERS - 1, &v))
            return 2;
        o->rss_at = (int)v;
        return 0;
    case OPT_SEED: {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(arg, &end, 0);
        if (errno || end == arg || *end || arg[0] == '-')
            return bad(name, arg, "a non-negative integer");
        o->seed = s;
        return 0;
    }
    case OPT_TIMEOUT:
        return parse_double(name, arg, 0.0, 86400.0, &o->timeout_s) ? 2 : 0;
    case OPT_QUIET:
        o->quiet = 1;
        return 0;
    case OPT_BUCKET_VIEW:
        o->bucket_view = 1;
        return 0;
    case OPT_CUDA_API:
        if (!strcmp(arg, "runtime"))
            o->cuda_api = EMU_CUDA_API_RUNTIME;
        else if (!strcmp(arg, "driver"))
            o->cuda_api = EMU_CUDA_API_DRIVER;
        else
            return bad(name, arg, "runtime or driver");
        return 0;
    case OPT_CURRENT_STREAM:
        o->current_stream = 1;
        return 0;
    case OPT_SCALE_EACH:
        o->scale_each = 1;
        return 0;
    case OPT_UNHOOKED_CONSUMER:
        o->unhooked_consumer = 1;
        return 0;
    case OPT_CONSUMER:
        return parse_consumers(name, arg, o);
    case OPT_WATCHDOG_US:
        return parse_double(name, arg, 10.0, 1e6, &o->watchdog_us) ? 2 : 0;
    case OPT_LOCAL_EVENT:
        return parse_local_event(name, arg, o);
    case OPT_CHAOS:
        return parse_double(name, arg, 0.0, 1.0, &o->chaos) ? 2 : 0;
    case OPT_POLL_WAIT:
        o->poll_wait = 1;
        return 0;
    case OPT_SECOND_COMM:
        o->second_comm = 1;
        return 0;
    case OPT_EXTRA_STREAMS:
        if (parse_long(name, arg, 1, EMU_MAX_EXTRA_STREAMS, &v))
            return 2;
        o->extra_streams = (int)v;
        return 0;
    }
    return parse_extra(c, name, arg, o);
}

/* --eval-calls and --tp-elements only with the option they qualify; then their defaults. */
static int check_extras(struct emu_options *o)
{
    if (o->eval_calls && !o->eval_every) {
        return prophet_cli_usage_error(PROG, "--eval-calls needs --eval-every");
    }
    if (o->tp_elements && !o->tp_comm) {
        return prophet_cli_usage_error(PROG, "--tp-elements needs --tp-comm");
    }
    if (!o->eval_calls)
        o->eval_calls = 1;
    if (!o->tp_elements)
        o->tp_elements = 256;
    return 0;
}

static int check_required(struct emu_options *o)
{
    const char *missing = NULL;

    if (!o->ranks)
        missing = "--ranks";
    else if (!o->profile)
        missing = "--profile";
    else if ((int)o->mode < 0)
        missing = "--mode";
    else if (!o->iters)
        missing = "--iters";
    if (missing) {
        return prophet_cli_usage_error(PROG, "missing required option %s", missing);
    }
    if (o->mismatch_rank >= o->ranks) {
        return prophet_cli_usage_error(PROG, "--mismatch-rank %d: must be below --ranks %d",
                                       o->mismatch_rank, o->ranks);
    }
    if (o->corrupt_rank >= o->ranks) {
        return prophet_cli_usage_error(PROG, "--corrupt-rank %d: must be below --ranks %d",
                                       o->corrupt_rank, o->ranks);
    }
    if (o->mismatch_rank >= 0 && o->warmup + o->iters < 2) {
        return prophet_cli_usage_error(PROG, "--mismatch-rank needs at least 2 iterations "
                                             "(--warmup + --iters)");
    }
    if (o->kill_rank >= o->ranks || (o->kill_rank >= 0 && o->ranks < 2)) {
        return prophet_cli_usage_error(
            PROG, "--kill-rank %d: must be below --ranks %d (at least 2)", o->kill_rank, o->ranks);
    }
    if (o->kill_rank >= 0 && o->kill_at_iter >= o->warmup + o->iters) {
        return prophet_cli_usage_error(PROG, "--kill-at-iter %d: the run has %d iterations",
                                       o->kill_at_iter, o->warmup + o->iters);
    }
    if (o->bucket_view && o->mode != EMU_MODE_DDP) {
        return prophet_cli_usage_error(PROG, "--bucket-view needs --mode ddp");
    }
    if ((o->current_stream || o->scale_each) && o->mode != EMU_MODE_PER_PARAM_SYNC) {
        return prophet_cli_usage_error(PROG, "--current-stream and --scale-each need --mode "
                                             "per-param-sync");
    }
    if (o->unhooked_consumer && (o->mode != EMU_MODE_PER_PARAM_SYNC || o->scale_each)) {
        return prophet_cli_usage_error(PROG, "--unhooked-consumer needs --mode per-param-sync "
                                             "(without --scale-each)");
    }
    if (o->consumers && o->mode != EMU_MODE_PER_PARAM_SYNC && o->mode != EMU_MODE_PER_TENSOR) {
        return prophet_cli_usage_error(PROG, "--consumer needs --mode per-param-sync or "
                                             "per-tensor");
    }
    if (o->consumers && o->wait != EMU_WAIT_ALL) {
        return prophet_cli_usage_error(PROG, "--consumer needs --wait all");
    }
    if ((o->nlocal || o->chaos > 0 || o->extra_streams) && o->mode == EMU_MODE_HOROVOD) {
        return prophet_cli_usage_error(PROG, "--local-event, --chaos and --extra-streams need "
                                             "--mode per-tensor, per-param-sync or ddp");
    }
    if (o->second_comm && (o->mode != EMU_MODE_PER_PARAM_SYNC || o->current_stream)) {
        return prophet_cli_usage_error(PROG, "--second-comm needs --mode per-param-sync "
                                             "(without --current-stream)");
    }
    if (o->extra_streams && o->scale_each) {
        return prophet_cli_usage_error(PROG, "--extra-streams cannot go with --scale-each (its "
                                             "checks read the unscaled results)");
    }
    if (o->poll_wait && ((o->mode != EMU_MODE_PER_TENSOR && o->mode != EMU_MODE_PER_PARAM_SYNC) ||
                         o->current_stream)) {
        return prophet_cli_usage_error(PROG, "--poll-wait needs --mode per-tensor or "
                                             "per-param-sync (without --current-stream)");
    }
    if (o->change_at_iter >= 0 && o->mode != EMU_MODE_PER_TENSOR) {
        return prophet_cli_usage_error(PROG, "--change-at-iter needs --mode per-tensor");
    }
    if (o->rss_at >= 0 && o->rss_at >= o->warmup + o->iters) {
        return prophet_cli_usage_error(PROG, "--rss %d: the run has %d iterations", o->rss_at,
                                       o->warmup + o->iters);
    }
    if (check_extras(o))
        return 2;
    if ((long)o->warmup + o->iters > EMU_MAX_ITERS) {
        return prophet_cli_usage_error(PROG, "--warmup + --iters must not exceed %d",
                                       EMU_MAX_ITERS);
    }
    return 0;
}

int emu_options_parse(int argc, char **argv, struct emu_options *o)
{
    int c, idx;

    set_defaults(o);
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":", long_opts, &idx)) != -1) {
        if (c == OPT_HELP) {
            emu_options_usage(stdout);
            return 1;
        }
        if (c == OPT_VERSION) {
            prophet_cli_version(PROG);
            return 1;
        }
        if (c == '?' || c == ':')
            return prophet_cli_getopt_error(PROG, c, argv, long_opts);
        if (parse_one(c, optarg, o))
            return 2;
    }
    if (optind < argc)
        return prophet_cli_usage_error(PROG, "unexpected argument '%s'", argv[optind]);
    return check_required(o);
}
