/* Error names and strings (cuGetErrorName, cuGetErrorString). Work before cuInit. */
#include <stddef.h>

#include "emu_internal.h"

struct emu_err {
    CUresult code;
    const char *name;
};

#define EMU_ERR(x) {x, #x},
static const struct emu_err emu_errs[] =
    {EMU_ERR(CUDA_SUCCESS) EMU_ERR(CUDA_ERROR_INVALID_VALUE) EMU_ERR(
        CUDA_ERROR_OUT_OF_MEMORY) EMU_ERR(CUDA_ERROR_NOT_INITIALIZED)
         EMU_ERR(CUDA_ERROR_DEINITIALIZED) EMU_ERR(CUDA_ERROR_PROFILER_DISABLED) EMU_ERR(
             CUDA_ERROR_PROFILER_NOT_INITIALIZED) EMU_ERR(CUDA_ERROR_PROFILER_ALREADY_STARTED)
             EMU_ERR(CUDA_ERROR_PROFILER_ALREADY_STOPPED) EMU_ERR(CUDA_ERROR_STUB_LIBRARY) EMU_ERR(
                 CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER) EMU_ERR(CUDA_ERROR_DEVICE_UNAVAILABLE)
                 EMU_ERR(CUDA_ERROR_NO_DEVICE) EMU_ERR(CUDA_ERROR_INVALID_DEVICE) EMU_ERR(
                     CUDA_ERROR_DEVICE_NOT_LICENSED) EMU_ERR(CUDA_ERROR_INVALID_IMAGE)
                     EMU_ERR(CUDA_ERROR_INVALID_CONTEXT) EMU_ERR(CUDA_ERROR_CONTEXT_ALREADY_CURRENT)
                         EMU_ERR(CUDA_ERROR_MAP_FAILED) EMU_ERR(CUDA_ERROR_UNMAP_FAILED) EMU_ERR(
                             CUDA_ERROR_ARRAY_IS_MAPPED) EMU_ERR(CUDA_ERROR_ALREADY_MAPPED)
                             EMU_ERR(CUDA_ERROR_NO_BINARY_FOR_GPU) EMU_ERR(
                                 CUDA_ERROR_ALREADY_ACQUIRED) EMU_ERR(CUDA_ERROR_NOT_MAPPED)
                                 EMU_ERR(CUDA_ERROR_NOT_MAPPED_AS_ARRAY) EMU_ERR(
                                     CUDA_ERROR_NOT_MAPPED_AS_POINTER) EMU_ERR(CUDA_ERROR_ECC_UNCORRECTABLE) EMU_ERR(CUDA_ERROR_UNSUPPORTED_LIMIT) EMU_ERR(CUDA_ERROR_CONTEXT_ALREADY_IN_USE) EMU_ERR(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED) EMU_ERR(CUDA_ERROR_INVALID_PTX) EMU_ERR(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT) EMU_ERR(CUDA_ERROR_NVLINK_UNCORRECTABLE) EMU_ERR(CUDA_ERROR_JIT_COMPILER_NOT_FOUND) EMU_ERR(CUDA_ERROR_UNSUPPORTED_PTX_VERSION) EMU_ERR(CUDA_ERROR_JIT_COMPILATION_DISABLED) EMU_ERR(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY) EMU_ERR(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC) EMU_ERR(CUDA_ERROR_CONTAINED) EMU_ERR(CUDA_ERROR_INVALID_SOURCE) EMU_ERR(CUDA_ERROR_FILE_NOT_FOUND) EMU_ERR(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND) EMU_ERR(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED) EMU_ERR(CUDA_ERROR_OPERATING_SYSTEM) EMU_ERR(CUDA_ERROR_INVALID_HANDLE) EMU_ERR(CUDA_ERROR_ILLEGAL_STATE) EMU_ERR(CUDA_ERROR_LOSSY_QUERY) EMU_ERR(CUDA_ERROR_NOT_FOUND) EMU_ERR(CUDA_ERROR_NOT_READY) EMU_ERR(CUDA_ERROR_ILLEGAL_ADDRESS) EMU_ERR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) EMU_ERR(CUDA_ERROR_LAUNCH_TIMEOUT)
                                     EMU_ERR(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING) EMU_ERR(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) EMU_ERR(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED) EMU_ERR(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE) EMU_ERR(CUDA_ERROR_CONTEXT_IS_DESTROYED) EMU_ERR(CUDA_ERROR_ASSERT) EMU_ERR(CUDA_ERROR_TOO_MANY_PEERS) EMU_ERR(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) EMU_ERR(
                                         CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED) EMU_ERR(CUDA_ERROR_HARDWARE_STACK_ERROR)
                                         EMU_ERR(
                                             CUDA_ERROR_ILLEGAL_INSTRUCTION) EMU_ERR(CUDA_ERROR_MISALIGNED_ADDRESS)
                                             EMU_ERR(CUDA_ERROR_INVALID_ADDRESS_SPACE) EMU_ERR(
                                                 CUDA_ERROR_INVALID_PC)
                                                 EMU_ERR(CUDA_ERROR_LAUNCH_FAILED) EMU_ERR(
                                                     CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE) EMU_ERR(CUDA_ERROR_TENSOR_MEMORY_LEAK)
                                                     EMU_ERR(CUDA_ERROR_NOT_PERMITTED) EMU_ERR(
                                                         CUDA_ERROR_NOT_SUPPORTED) EMU_ERR(CUDA_ERROR_SYSTEM_NOT_READY)
                                                         EMU_ERR(
                                                             CUDA_ERROR_SYSTEM_DRIVER_MISMATCH) EMU_ERR(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
                                                             EMU_ERR(CUDA_ERROR_MPS_CONNECTION_FAILED) EMU_ERR(CUDA_ERROR_MPS_RPC_FAILURE) EMU_ERR(
                                                                 CUDA_ERROR_MPS_SERVER_NOT_READY) EMU_ERR(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED)
                                                                 EMU_ERR(
                                                                     CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED) EMU_ERR(CUDA_ERROR_MPS_CLIENT_TERMINATED)
                                                                     EMU_ERR(CUDA_ERROR_CDP_NOT_SUPPORTED) EMU_ERR(CUDA_ERROR_CDP_VERSION_MISMATCH) EMU_ERR(
                                                                         CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) EMU_ERR(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
                                                                         EMU_ERR(
                                                                             CUDA_ERROR_STREAM_CAPTURE_MERGE)
                                                                             EMU_ERR(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED) EMU_ERR(
                                                                                 CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
                                                                                 EMU_ERR(CUDA_ERROR_STREAM_CAPTURE_ISOLATION) EMU_ERR(
                                                                                     CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
                                                                                     EMU_ERR(CUDA_ERROR_CAPTURED_EVENT) EMU_ERR(
                                                                                         CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)
                                                                                         EMU_ERR(
                                                                                             CUDA_ERROR_TIMEOUT) EMU_ERR(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
                                                                                             EMU_ERR(CUDA_ERROR_EXTERNAL_DEVICE) EMU_ERR(
                                                                                                 CUDA_ERROR_INVALID_CLUSTER_SIZE)
                                                                                                 EMU_ERR(
                                                                                                     CUDA_ERROR_FUNCTION_NOT_LOADED)
                                                                                                     EMU_ERR(
                                                                                                         CUDA_ERROR_INVALID_RESOURCE_TYPE)
                                                                                                         EMU_ERR(
                                                                                                             CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION)
                                                                                                             EMU_ERR(
                                                                                                                 CUDA_ERROR_KEY_ROTATION)
                                                                                                                 EMU_ERR(
                                                                                                                     CUDA_ERROR_UNKNOWN)};
#undef EMU_ERR

struct emu_err_text {
    CUresult code;
    const char *text;
};

static const struct emu_err_text emu_texts[] = {
    {CUDA_SUCCESS, "no error"},
    {CUDA_ERROR_INVALID_VALUE, "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "device not ready"},
    {CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"},
    {CUDA_ERROR_NOT_SUPPORTED, "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not initiated in this stream"},
    {CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context is already current"},
    {CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "primary context active"},
    {CUDA_ERROR_UNKNOWN, "unknown error"},
};

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof(emu_errs) / sizeof(emu_errs[0]); i++) {
        if (emu_errs[i].code == error) {
            *pStr = emu_errs[i].name;
            return CUDA_SUCCESS;
        }
    }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof(emu_texts) / sizeof(emu_texts[0]); i++) {
        if (emu_texts[i].code == error) {
            *pStr = emu_texts[i].text;
            return CUDA_SUCCESS;
        }
    }
    /* Known code without a hand-written text: its name is the text. */
    return cuGetErrorName(error, pStr);
}
