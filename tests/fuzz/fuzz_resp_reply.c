/* fuzz_resp_reply.c -- engine replies as cairnd and the agent read them:
 * any bytes through a reader bounded by resp_engine_limits, then each
 * reply through the parser that walks such replies, chosen by the first
 * byte (ROLE, CLUSTER SLOTS or CLUSTER SHARDS). A reply taken is within
 * the limits, a parser either fills its struct or says why not, and
 * nothing leaks. */
#include <stdint.h>
#include <stdlib.h>

#include "cluster.h"
#include "fuzz.h"
#include "resp.h"
#include "resp_reader.h"
#include "role.h"

/* Check that reply, at nesting depth (1 for the top), is within l. */
static void check_tree(const redisReply *reply, int depth, const struct resp_limits *l)
{
    switch (reply->type) {
    case REDIS_REPLY_ARRAY:
        FUZZ_ASSERT(depth <= l->max_depth && reply->elements <= l->max_elements);
        for (size_t i = 0; i < reply->elements; i++)
            check_tree(reply->element[i], depth + 1, l);
        break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        FUZZ_ASSERT(reply->len <= l->max_string);
        break;
    default:
        break;
    }
}

static void parse(uint8_t which, const redisReply *reply)
{
    char err[256] = "";

    switch (which % 3) {
    case 0: {
        struct engine_role role;
        if (engine_role_parse(reply, &role, err, sizeof(err)))
            engine_role_free(&role);
        else
            FUZZ_ASSERT(err[0] != '\0');
        break;
    }
    case 1: {
        struct engine_cluster_slots slots;
        if (engine_cluster_slots_parse(reply, &slots, err, sizeof(err)))
            engine_cluster_slots_free(&slots);
        else
            FUZZ_ASSERT(err[0] != '\0' && slots.count == 0 && slots.entries == NULL);
        break;
    }
    default: {
        struct engine_cluster_shards shards;
        if (engine_cluster_shards_parse(reply, &shards, err, sizeof(err)))
            engine_cluster_shards_free(&shards);
        else
            FUZZ_ASSERT(err[0] != '\0' && shards.count == 0 && shards.shards == NULL);
        break;
    }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;

    redisReader *r = resp_reader_new(&resp_engine_limits);
    redisReply *reply = NULL;
    char err[128];
    int rc;

    FUZZ_ASSERT(redisReaderFeed(r, (const char *)data + 1, size - 1) == REDIS_OK);
    while ((rc = resp_reader_next(r, &reply, err, sizeof(err))) == 1) {
        check_tree(reply, 1, &resp_engine_limits);
        parse(data[0], reply);
        resp_reply_free(reply);
    }
    FUZZ_ASSERT(rc == 0 ? reply == NULL : err[0] != '\0');
    resp_reader_free(r);
    return 0;
}
