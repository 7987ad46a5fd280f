/* Visibility of the interposer's own definitions. libprophet.so is built with -fvisibility=hidden
 * and a version script (prophet.map): only what is marked PROPHET_EXPORT and listed there leaves
 * the library (the NCCL entry points). */
#ifndef PROPHET_SYMBOL_EXPORT_H
#define PROPHET_SYMBOL_EXPORT_H

#define PROPHET_EXPORT __attribute__((visibility("default")))

/* The expansion of a macro as a string (cuda.h maps names to versioned symbols). */
#define PROPHET_XSTR(x) PROPHET_STR(x)
#define PROPHET_STR(x) #x

#endif
