/* fuzz_resp_request.c -- Sentinel requests as cairnd's listener reads them:
 * any bytes, fed in chunks of any size (the first byte picks them) to a
 * reader bounded by sentinel_request_limits, one request taken per turn and
 * nothing more fed while one waits. Every request taken is 1 to
 * max_elements bulk strings within the limits, the reader never holds more
 * than max_buffered unparsed bytes between turns, and nothing leaks. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz.h"
#include "resp_reader.h"
#include "sentinel.h"

/* Chunk sizes from a small generator seeded by the first byte: the same
 * input is always fed the same way, and the fuzzer can vary the split. */
static size_t next_chunk(uint32_t *state, size_t most)
{
    *state = *state * 1103515245u + 12345u;
    return 1 + (*state >> 16) % most;
}

static void check_request(const redisReply *q, const struct resp_limits *l)
{
    size_t bytes = 0;

    FUZZ_ASSERT(q->type == REDIS_REPLY_ARRAY);
    FUZZ_ASSERT(q->elements >= 1 && q->elements <= l->max_elements);
    for (size_t i = 0; i < q->elements; i++) {
        FUZZ_ASSERT(q->element[i]->type == REDIS_REPLY_STRING);
        FUZZ_ASSERT(q->element[i]->len <= l->max_string);
        bytes += q->element[i]->len;
    }
    FUZZ_ASSERT(bytes <= l->max_reply);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct resp_limits *l = &sentinel_request_limits;
    redisReader *r = resp_reader_new(l);
    uint32_t state = size > 0 ? data[0] : 0;
    size_t most = 1 + (size_t)(size > 0 ? data[0] : 0) * 16, pos = size > 0 ? 1 : 0;
    bool waiting = false; /* a complete request may wait in the reader */
    char err[128];

    for (;;) {
        if (!waiting) {
            if (pos == size)
                break;
            size_t n = next_chunk(&state, most);
            n = n < size - pos ? n : size - pos;
            FUZZ_ASSERT(redisReaderFeed(r, (const char *)data + pos, n) == REDIS_OK);
            pos += n;
        }
        redisReply *q = NULL;
        int rc = resp_reader_next_request(r, &q, err, sizeof(err));
        if (rc < 0) {
            FUZZ_ASSERT(q == NULL && err[0] != '\0');
            break;
        }
        waiting = rc == 1;
        if (rc == 1) {
            check_request(q, l);
            freeReplyObject(q);
        } else {
            FUZZ_ASSERT(q == NULL && resp_reader_buffered(r) <= l->max_buffered);
        }
    }
    resp_reader_free(r);
    return 0;
}
