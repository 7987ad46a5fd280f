/* Element types and reductions of the emulated NCCL.
 *
 * Integer types wrap around like the GPU does (sums and products are computed in the unsigned
 * type of the same width). float32 and float64 are reduced in their own precision. The narrow
 * formats (float16, bfloat16, fp8) are widened to double, reduced, and rounded back once to the
 * nearest representable value (ties to even): for two operands this equals the correctly rounded
 * result. fp8 conversions saturate to the largest finite value, as CUDA's __nv_fp8 types do. */
#include "emu_dtype.h"

#include <math.h>
#include <nccl.h>

size_t emu_dtype_size(int dtype)
{
    switch (dtype) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
        return 1;
    case ncclFloat16:
    case ncclBfloat16:
        return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
        return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
        return 8;
    default:
        return 0;
    }
}

const char *emu_dtype_name(int dtype)
{
    static const char *const names[] = {"int8",    "uint8",    "int32",   "uint32",
                                        "int64",   "uint64",   "float16", "float32",
                                        "float64", "bfloat16", "fp8e4m3", "fp8e5m2"};
    if (dtype < 0 || dtype >= (int)(sizeof(names) / sizeof(names[0])))
        return "?";
    return names[dtype];
}

const char *emu_redop_name(int op)
{
    static const char *const names[] = {"sum", "prod", "max", "min", "avg"};
    if (op < 0 || op >= (int)(sizeof(names) / sizeof(names[0])))
        return "?";
    return names[op];
}

/* A binary floating-point format with `mbits` mantissa bits and exponent bias `bias`. */
struct emu_fmt {
    int mbits;
    int ebits;
    int bias;
    int has_inf;   /* all-ones exponent means inf/NaN (IEEE style) */
    double maxfin; /* largest finite value */
    int saturate;  /* overflow gives maxfin instead of inf */
};

static const struct emu_fmt fmt_half = {10, 5, 15, 1, 65504.0, 0};
static const struct emu_fmt fmt_bf16 = {7, 8, 127, 1, 3.38953138925153547590470800371487866880e38,
                                        0};
static const struct emu_fmt fmt_e4m3 = {3, 4, 7, 0, 448.0, 1};
static const struct emu_fmt fmt_e5m2 = {2, 5, 15, 1, 57344.0, 1};

static double fmt_decode(const struct emu_fmt *f, uint32_t bits)
{
    uint32_t sign = bits >> (f->mbits + f->ebits) & 1;
    uint32_t e = bits >> f->mbits & ((1u << f->ebits) - 1);
    uint32_t m = bits & ((1u << f->mbits) - 1);
    uint32_t emask = (1u << f->ebits) - 1;
    double v;

    if (f->has_inf && e == emask)
        v = m ? NAN : INFINITY;
    else if (!f->has_inf && e == emask && m == (1u << f->mbits) - 1)
        v = NAN;
    else if (e == 0)
        v = ldexp((double)m, 1 - f->bias - f->mbits);
    else
        v = ldexp((double)(m | 1u << f->mbits), (int)e - f->bias - f->mbits);
    return sign ? -v : v;
}

static uint32_t fmt_encode(const struct emu_fmt *f, double d)
{
    uint32_t sign = signbit(d) ? 1u << (f->mbits + f->ebits) : 0;
    uint32_t emask = (1u << f->ebits) - 1;
    int emin = 1 - f->bias, x;
    double a = fabs(d), q, v;

    if (isnan(d))
        return sign | emask << f->mbits | ((1u << f->mbits) - 1);
    if (a == 0)
        return sign;
    if (isinf(a))
        goto overflow;
    frexp(a, &x);
    x -= 1; /* a = 1.xxx * 2^x */
    q = ldexp(1.0, (x < emin ? emin : x) - f->mbits);
    v = nearbyint(a / q) * q; /* default rounding mode: ties to even */
    if (v > f->maxfin)
        goto overflow;
    if (v < ldexp(1.0, emin))
        return sign | (uint32_t)(v / ldexp(1.0, emin - f->mbits));
    frexp(v, &x);
    x -= 1;
    return sign | (uint32_t)(x + f->bias) << f->mbits |
           ((uint32_t)(v / ldexp(1.0, x - f->mbits)) & ((1u << f->mbits) - 1));
overflow:
    if (f->saturate || !f->has_inf)
        return sign | fmt_encode(f, f->maxfin);
    return sign | emask << f->mbits;
}

double emu_half_to_double(uint16_t h)
{
    return fmt_decode(&fmt_half, h);
}

uint16_t emu_double_to_half(double d)
{
    return (uint16_t)fmt_encode(&fmt_half, d);
}

double emu_bf16_to_double(uint16_t b)
{
    return fmt_decode(&fmt_bf16, b);
}

uint16_t emu_double_to_bf16(double d)
{
    return (uint16_t)fmt_encode(&fmt_bf16, d);
}

double emu_e4m3_to_double(uint8_t v)
{
    return fmt_decode(&fmt_e4m3, v);
}

uint8_t emu_double_to_e4m3(double d)
{
    return (uint8_t)fmt_encode(&fmt_e4m3, d);
}

double emu_e5m2_to_double(uint8_t v)
{
    return fmt_decode(&fmt_e5m2, v);
}

uint8_t emu_double_to_e5m2(double d)
{
    return (uint8_t)fmt_encode(&fmt_e5m2, d);
}

#define EMU_MAX(a, b) ((a) > (b) ? (a) : (b))
#define EMU_MIN(a, b) ((a) < (b) ? (a) : (b))

/* T is the element type, U the type sums and products are taken in: the unsigned type of the same
 * width for integers (wrap-around arithmetic), T itself for float and double. */
#define EMU_REDUCE(T, U)                                                                           \
    do {                                                                                           \
        T *d = dst;                                                                                \
        const T *x = acc, *y = own;                                                                \
        for (size_t i = 0; i < count; i++) {                                                       \
            switch (op) {                                                                          \
            case ncclProd:                                                                         \
                d[i] = (T)((U)x[i] * (U)y[i]);                                                     \
                break;                                                                             \
            case ncclMax:                                                                          \
                d[i] = EMU_MAX(x[i], y[i]);                                                        \
                break;                                                                             \
            case ncclMin:                                                                          \
                d[i] = EMU_MIN(x[i], y[i]);                                                        \
                break;                                                                             \
            default:                                                                               \
                d[i] = (T)((U)x[i] + (U)y[i]);                                                     \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* Narrow floats: widen with TO, reduce in double, round back with FROM. */
#define EMU_REDUCE_NARROW(T, TO, FROM)                                                             \
    do {                                                                                           \
        T *d = dst;                                                                                \
        const T *x = acc, *y = own;                                                                \
        for (size_t i = 0; i < count; i++) {                                                       \
            double a = TO(x[i]), b = TO(y[i]), r;                                                  \
            switch (op) {                                                                          \
            case ncclProd:                                                                         \
                r = a * b;                                                                         \
                break;                                                                             \
            case ncclMax:                                                                          \
                r = EMU_MAX(a, b);                                                                 \
                break;                                                                             \
            case ncclMin:                                                                          \
                r = EMU_MIN(a, b);                                                                 \
                break;                                                                             \
            default:                                                                               \
                r = a + b;                                                                         \
            }                                                                                      \
            d[i] = FROM(r);                                                                        \
        }                                                                                          \
    } while (0)

void emu_reduce(void *dst, const void *acc, const void *own, size_t count, int dtype, int op)
{
    switch (dtype) {
    case ncclInt8:
        EMU_REDUCE(int8_t, uint8_t);
        break;
    case ncclUint8:
        EMU_REDUCE(uint8_t, uint8_t);
        break;
    case ncclInt32:
        EMU_REDUCE(int32_t, uint32_t);
        break;
    case ncclUint32:
        EMU_REDUCE(uint32_t, uint32_t);
        break;
    case ncclInt64:
        EMU_REDUCE(int64_t, uint64_t);
        break;
    case ncclUint64:
        EMU_REDUCE(uint64_t, uint64_t);
        break;
    case ncclFloat32:
        EMU_REDUCE(float, float);
        break;
    case ncclFloat64:
        EMU_REDUCE(double, double);
        break;
    case ncclFloat16:
        EMU_REDUCE_NARROW(uint16_t, emu_half_to_double, emu_double_to_half);
        break;
    case ncclBfloat16:
        EMU_REDUCE_NARROW(uint16_t, emu_bf16_to_double, emu_double_to_bf16);
        break;
    case ncclFloat8e4m3:
        EMU_REDUCE_NARROW(uint8_t, emu_e4m3_to_double, emu_double_to_e4m3);
        break;
    case ncclFloat8e5m2:
        EMU_REDUCE_NARROW(uint8_t, emu_e5m2_to_double, emu_double_to_e5m2);
        break;
    default:
        break;
    }
}

#define EMU_DIVIDE(T)                                                                              \
    do {                                                                                           \
        T *b = buf;                                                                                \
        for (size_t i = 0; i < count; i++)                                                         \
            b[i] = (T)(b[i] / (T)n);                                                               \
    } while (0)

#define EMU_DIVIDE_NARROW(T, TO, FROM)                                                             \
    do {                                                                                           \
        T *b = buf;                                                                                \
        for (size_t i = 0; i < count; i++)                                                         \
            b[i] = FROM(TO(b[i]) / n);                                                             \
    } while (0)

void emu_divide(void *buf, size_t count, int dtype, int n)
{
    switch (dtype) {
    case ncclInt8:
        EMU_DIVIDE(int8_t);
        break;
    case ncclUint8:
        EMU_DIVIDE(uint8_t);
        break;
    case ncclInt32:
        EMU_DIVIDE(int32_t);
        break;
    case ncclUint32:
        EMU_DIVIDE(uint32_t);
        break;
    case ncclInt64:
        EMU_DIVIDE(int64_t);
        break;
    case ncclUint64:
        EMU_DIVIDE(uint64_t);
        break;
    case ncclFloat32:
        EMU_DIVIDE(float);
        break;
    case ncclFloat64:
        EMU_DIVIDE(double);
        break;
    case ncclFloat16:
        EMU_DIVIDE_NARROW(uint16_t, emu_half_to_double, emu_double_to_half);
        break;
    case ncclBfloat16:
        EMU_DIVIDE_NARROW(uint16_t, emu_bf16_to_double, emu_double_to_bf16);
        break;
    case ncclFloat8e4m3:
        EMU_DIVIDE_NARROW(uint8_t, emu_e4m3_to_double, emu_double_to_e4m3);
        break;
    case ncclFloat8e5m2:
        EMU_DIVIDE_NARROW(uint8_t, emu_e5m2_to_double, emu_double_to_e5m2);
        break;
    default:
        break;
    }
}

#define EMU_SCALE(T)                                                                               \
    do {                                                                                           \
        const T *a = src;                                                                          \
        T *b = dst;                                                                                \
        for (size_t i = 0; i < count; i++)                                                         \
            b[i] = (T)((double)a[i] * s);                                                          \
    } while (0)

#define EMU_SCALE_NARROW(T, TO, FROM)                                                              \
    do {                                                                                           \
        const T *a = src;                                                                          \
        T *b = dst;                                                                                \
        for (size_t i = 0; i < count; i++)                                                         \
            b[i] = FROM(TO(a[i]) * s);                                                             \
    } while (0)

void emu_scale(void *dst, const void *src, size_t count, int dtype, double s)
{
    switch (dtype) {
    case ncclInt8:
        EMU_SCALE(int8_t);
        break;
    case ncclUint8:
        EMU_SCALE(uint8_t);
        break;
    case ncclInt32:
        EMU_SCALE(int32_t);
        break;
    case ncclUint32:
        EMU_SCALE(uint32_t);
        break;
    case ncclInt64:
        EMU_SCALE(int64_t);
        break;
    case ncclUint64:
        EMU_SCALE(uint64_t);
        break;
    case ncclFloat32:
        EMU_SCALE(float);
        break;
    case ncclFloat64:
        EMU_SCALE(double);
        break;
    case ncclFloat16:
        EMU_SCALE_NARROW(uint16_t, emu_half_to_double, emu_double_to_half);
        break;
    case ncclBfloat16:
        EMU_SCALE_NARROW(uint16_t, emu_bf16_to_double, emu_double_to_bf16);
        break;
    case ncclFloat8e4m3:
        EMU_SCALE_NARROW(uint8_t, emu_e4m3_to_double, emu_double_to_e4m3);
        break;
    case ncclFloat8e5m2:
        EMU_SCALE_NARROW(uint8_t, emu_e5m2_to_double, emu_double_to_e5m2);
        break;
    default:
        break;
    }
}

double emu_to_double(const void *p, int dtype)
{
    switch (dtype) {
    case ncclInt8:
        return *(const int8_t *)p;
    case ncclUint8:
        return *(const uint8_t *)p;
    case ncclInt32:
        return *(const int32_t *)p;
    case ncclUint32:
        return *(const uint32_t *)p;
    case ncclInt64:
        return (double)*(const int64_t *)p;
    case ncclUint64:
        return (double)*(const uint64_t *)p;
    case ncclFloat32:
        return *(const float *)p;
    case ncclFloat64:
        return *(const double *)p;
    case ncclFloat16:
        return emu_half_to_double(*(const uint16_t *)p);
    case ncclBfloat16:
        return emu_bf16_to_double(*(const uint16_t *)p);
    case ncclFloat8e4m3:
        return emu_e4m3_to_double(*(const uint8_t *)p);
    case ncclFloat8e5m2:
        return emu_e5m2_to_double(*(const uint8_t *)p);
    default:
        return 0;
    }
}
