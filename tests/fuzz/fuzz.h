/* fuzz.h -- what every fuzz target shares: libFuzzer's entry point and an
 * assertion that holds in every build (a broken promise is a crash the
 * fuzzer keeps). Each tests/fuzz/fuzz_NAME.c is one target; its seed corpus
 * is tests/fuzz/corpus/NAME/ (see tests/fuzz/run). */
#ifndef CAIRN_FUZZ_H
#define CAIRN_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(cond)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: broken promise: %s\n", __FILE__, __LINE__, #cond);             \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
