/* Driver initialisation, version, devices, and the fork handler. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

struct emu_global emu_g = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* State inherited from the parent at fork: kept reachable (never freed, never used). */
static struct emu_global emu_prefork[4];
static unsigned emu_nforks;

unsigned long long emu_next_id(void)
{
    return atomic_fetch_add(&emu_g.next_id, 1) + 1;
}

CUresult emu_check_init_only(void)
{
    return atomic_load_explicit(&emu_g.initialized, memory_order_acquire)
               ? CUDA_SUCCESS
               : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult emu_check_init(void)
{
    CUresult rc = emu_check_init_only();
    return rc ? rc : emu_sticky();
}

CUresult emu_sticky(void)
{
    return (CUresult)atomic_load_explicit(&emu_g.sticky, memory_order_acquire);
}

void emu_sticky_set(CUresult rc)
{
    int none = 0;
    atomic_compare_exchange_strong(&emu_g.sticky, &none, (int)rc);
    emu_notify(); /* every wait returns (emu_wait) */
}

static int emu_env_int(const char *name, int def, int lo, int hi)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < lo || x > hi) {
        fprintf(stderr, "emu-cuda: ignoring %s=%s (want %d..%d)\n", name, v, lo, hi);
        return def;
    }
    return (int)x;
}

CUresult cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&emu_g.lock);
    if (!atomic_load(&emu_g.initialized)) {
        emu_g.ndev = emu_env_int("EMU_CUDA_DEVICES", 1, 0, EMU_MAX_DEVICES);
        emu_g.poll_cap_us = (unsigned)emu_env_int("EMU_CUDA_POLL_US", 200, 20, 100000);
        emu_g.legacy_sync = emu_env_int("EMU_CUDA_LEGACY_SYNC", 1, 0, 1);
        /* a real driver's host time per record on an idle stream (docs/benchmarks.md, "What the
         * emulated driver charges"): 2.5 us with timing, a tenth of it without */
        emu_g.inline_record = emu_env_int("EMU_CUDA_INLINE_RECORD", 1, 0, 1);
        emu_g.record_ns = (unsigned)emu_env_int("EMU_CUDA_RECORD_NS", 2500, 0, 1000000);
        emu_g.record_notiming_ns =
            (unsigned)emu_env_int("EMU_CUDA_RECORD_NOTIMING_NS", 250, 0, 1000000);
        /* a real GPU blocks a launch once its push buffer is full: commonly measured, about 1024
         * pending launches; 0 = unbounded */
        emu_g.queue_depth = (unsigned)emu_env_int("EMU_CUDA_QUEUE_DEPTH", 1024, 0, 1 << 30);
        /* device memory that cuIpcGetMemHandle can share (page mappings); off: heap memory, which
         * a sanitizer checks to the byte */
        emu_g.ipc_mem = emu_env_int("EMU_CUDA_IPC_MEM", 0, 0, 1);
        /* a real driver gives a destroyed event's handle to a later cuEventCreate */
        emu_g.event_reuse = emu_env_int("EMU_CUDA_EVENT_REUSE", 0, 0, 1);
        /* CUDA_DEVICE_MAX_CONNECTIONS=K (8 on a real driver; 1 in Megatron): K hardware queues */
        emu_g.nqueues = emu_env_int(
            "EMU_CUDA_MAX_CONNECTIONS",
            emu_env_int("CUDA_DEVICE_MAX_CONNECTIONS", 0, 0, EMU_QUEUES_MAX), 0, EMU_QUEUES_MAX);
        if (emu_g.nqueues)
            emu_g.inline_record = 0; /* a record takes its turn in the queue too */
        /* a real driver's cuMemFree synchronises the device (an implicit synchronisation) */
        emu_g.free_sync = emu_env_int("EMU_CUDA_FREE_SYNC", 1, 0, 1);
        atomic_store_explicit(&emu_g.initialized, 1, memory_order_release);
    }
    pthread_mutex_unlock(&emu_g.lock);
    return emu_g.ndev > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = CUDA_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = emu_g.ndev;
    return CUDA_SUCCESS;
}

CUresult emu_check_dev(CUdevice dev)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    return dev >= 0 && dev < emu_g.ndev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= emu_g.ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult rc = emu_check_dev(dev);
    if (rc)
        return rc;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "Prophet Emulated GPU %d", dev);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    CUresult rc = emu_check_dev(dev);
    if (rc)
        return rc;
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    memset(uuid, 0, sizeof(*uuid));
    memcpy(uuid->bytes, "emu-cuda-gpu", 12);
    uuid->bytes[15] = (char)dev;
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult rc = emu_check_dev(dev);
    if (rc)
        return rc;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = (size_t)80 << 30;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    CUresult rc = emu_check_dev(dev);
    if (rc)
        return rc;
    if (!pciBusId || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", 0x10 + dev);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CUresult rc = emu_check_dev(dev);
    if (rc)
        return rc;
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *pi = 9;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *pi = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *pi = 132;
        break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        *pi = 32;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *pi = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        *pi = 0x10 + dev;
        break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
        *pi = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
        *pi = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
        *pi = 1;
        break;
    default:
        *pi = 0;
        break;
    }
    return CUDA_SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    CUresult rc = emu_check_dev(dev);
    if (rc || (rc = emu_check_dev(peerDev)))
        return rc;
    if (!canAccessPeer)
        return CUDA_ERROR_INVALID_VALUE;
    *canAccessPeer = dev != peerDev;
    return CUDA_SUCCESS;
}

/* After fork only the forking thread exists: every stream thread of the parent is gone, and
 * their locks may be held. Forget all objects (kept reachable in emu_prefork) and require a
 * new cuInit. */
void emu_reset_after_fork(void)
{
    if (emu_nforks < sizeof(emu_prefork) / sizeof(emu_prefork[0]))
        memcpy(&emu_prefork[emu_nforks++], &emu_g, sizeof(emu_g));
    unsigned long long next = atomic_load(&emu_g.next_id);
    memset(&emu_g, 0, sizeof(emu_g));
    pthread_mutex_init(&emu_g.lock, NULL);
    atomic_store(&emu_g.next_id, next);
    emu_wait_reset_after_fork();
}

static void emu_fork_prepare(void)
{
    pthread_mutex_lock(&emu_g.lock);
}

static void emu_fork_parent(void)
{
    pthread_mutex_unlock(&emu_g.lock);
}

static void emu_fork_child(void)
{
    pthread_mutex_unlock(&emu_g.lock);
    emu_reset_after_fork();
}

__attribute__((constructor)) static void emu_cuda_load(void)
{
    pthread_atfork(emu_fork_prepare, emu_fork_parent, emu_fork_child);
}
