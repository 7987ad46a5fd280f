/* NCCL data types: name and element size (nccl.h's ncclDataType_t, ncclNumTypes of them). */
#include "real_libs/nccl_dtype.h"

const char *prophet_dtype_name(ncclDataType_t t)
{
    static const char *const names[ncclNumTypes] = {"int8",    "uint8",    "int32",   "uint32",
                                                    "int64",   "uint64",   "float16", "float32",
                                                    "float64", "bfloat16", "fp8e4m3", "fp8e5m2"};
    return (unsigned)t < ncclNumTypes ? names[t] : "unknown";
}

size_t prophet_dtype_size(ncclDataType_t t)
{
    static const unsigned char sizes[ncclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
    return (unsigned)t < ncclNumTypes ? sizes[t] : 0;
}
