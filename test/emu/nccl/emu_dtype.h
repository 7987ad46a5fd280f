/* Element types and reductions of the emulated NCCL. */
#ifndef EMU_DTYPE_H
#define EMU_DTYPE_H

#include <stddef.h>
#include <stdint.h>

/* Size in bytes of one element of NCCL data type `dtype`, 0 when unknown. */
size_t emu_dtype_size(int dtype);
/* Name as printed in messages ("float32"), "?" when unknown. */
const char *emu_dtype_name(int dtype);
/* Name of a built-in reduction ("sum"), "?" when unknown. */
const char *emu_redop_name(int op);

/* Conversions of the narrow float formats (round to nearest, ties to even; NaN kept). */
double emu_half_to_double(uint16_t h);
uint16_t emu_double_to_half(double d);
double emu_bf16_to_double(uint16_t b);
uint16_t emu_double_to_bf16(double d);
double emu_e4m3_to_double(uint8_t v);
uint8_t emu_double_to_e4m3(double d);
double emu_e5m2_to_double(uint8_t v);
uint8_t emu_double_to_e5m2(double d);

/* dst[i] = acc[i] (op) own[i] for i < count, op one of sum/prod/max/min/avg (avg sums).
 * dst may alias acc or own. */
void emu_reduce(void *dst, const void *acc, const void *own, size_t count, int dtype, int op);
/* buf[i] /= n (the final step of ncclAvg). */
void emu_divide(void *buf, size_t count, int dtype, int n);
/* dst[i] = src[i] * s (ncclRedOpCreatePreMulSum's pre-multiplication); dst may alias src. */
void emu_scale(void *dst, const void *src, size_t count, int dtype, double s);
/* One element of type dtype at p as a double (0 for an unknown type). */
double emu_to_double(const void *p, int dtype);

#endif
