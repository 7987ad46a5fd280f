/* prophet-emu: a data-parallel training job (per-tensor hooks, PyTorch DDP or Horovod) on the
 * emulated GPU cluster, for end-to-end tests of the NCCL interposer. See --help and README.md. */
#include <nccl.h>
#include <stdio.h>
#include <string.h>

#include "consumer_ipc.h"

#include "launch.h"
#include "options.h"
#include "profile.h"
#include "report.h"
#include "shared.h"

int main(int argc, char **argv)
{
    struct emu_options opt;
    struct emu_profile prof;
    struct emu_shared *sh = NULL;
    int code, ok;

    if (argc == 3 && !strcmp(argv[1], EMU_IPC_CHILD_ARG))
        return emu_ipc_child_main(argv[2]); /* --consumer ipc's consumer process */
    code = emu_options_parse(argc, argv, &opt);
    if (code == 1)
        return EMU_EXIT_OK;
    if (code)
        return EMU_EXIT_USAGE;
    if (emu_profile_load(opt.profile, &prof))
        return EMU_EXIT_USAGE;
    if (opt.host_sync_at >= (long)prof.n) {
        fprintf(stderr, "prophet-emu: --host-sync-at %ld: the profile has %zu gradients\n",
                opt.host_sync_at, prof.n);
        code = EMU_EXIT_USAGE;
        goto out;
    }
    for (int i = 0; i < opt.nlocal; i++)
        if (opt.local[i].grad >= (long)prof.n || opt.local[i].rank >= opt.ranks) {
            fprintf(stderr,
                    "prophet-emu: --local-event: gradient %ld or rank %d out of range "
                    "(%zu gradients, %d ranks)\n",
                    opt.local[i].grad, opt.local[i].rank, prof.n, opt.ranks);
            code = EMU_EXIT_USAGE;
            goto out;
        }
    sh = emu_shared_create(opt.ranks, opt.warmup + opt.iters);
    if (!sh) {
        code = EMU_EXIT_FAIL;
        goto out;
    }
    /* The parent makes no CUDA call; it makes the unique id after forking (see launch.c). */
    code = emu_launch(&opt, &prof, sh);
    ok = code == EMU_EXIT_OK;
    for (int r = 0; ok && r < opt.ranks; r++)
        ok = sh->result[r].finished && sh->result[r].ok;
    if (ok != (code == EMU_EXIT_OK))
        code = EMU_EXIT_FAIL;
    if (emu_report(&opt, &prof, sh, ok) && code == EMU_EXIT_OK)
        code = EMU_EXIT_USAGE;
out:
    emu_shared_destroy(sh);
    emu_profile_free(&prof);
    return code;
}
