/* NCCL data types (nccl_dtype.c): name and element size, "unknown" / 0 outside nccl.h's range. */
#ifndef PROPHET_NCCL_DTYPE_H
#define PROPHET_NCCL_DTYPE_H

#include <nccl.h>
#include <stddef.h>

const char *prophet_dtype_name(ncclDataType_t t);
size_t prophet_dtype_size(ncclDataType_t t);

#endif
