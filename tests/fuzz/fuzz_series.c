/* fuzz_series.c -- the metric series codec: any stored bytes decode to a
 * series or to -1, never past the slots given; and any values encode and
 * decode back to the same bits. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "series_codec.h"

#define SLOTS 1440

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static float values[SLOTS], back[SLOTS];
    static bool present[SLOTS], back_present[SLOTS];

    long n = series_decode(data, size, values, present, SLOTS);
    FUZZ_ASSERT(n >= -1 && n <= SLOTS);

    /* The input read as values (4 bytes each, a zero bit: absent). */
    size_t count = size / 5 < SLOTS ? size / 5 : SLOTS;
    for (size_t i = 0; i < count; i++) {
        memcpy(&values[i], data + 5 * i, sizeof(float));
        present[i] = (data[5 * i + 4] & 1) != 0;
    }
    size_t len = 0;
    unsigned char *enc = series_encode(values, present, count, &len);
    FUZZ_ASSERT(series_decode(enc, len, back, back_present, SLOTS) == (long)count);
    for (size_t i = 0; i < count; i++) {
        FUZZ_ASSERT(back_present[i] == present[i]);
        FUZZ_ASSERT(!present[i] || memcmp(&back[i], &values[i], sizeof(float)) == 0);
    }
    free(enc);
    return 0;
}
