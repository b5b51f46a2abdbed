/* fuzz_agent_desired.c -- the agent's reading of cairnd's sync answer (or
 * its saved copy on disk), agent/desired.h: a malformed answer is refused
 * as a whole, an accepted one holds only valid node ids and ports. */
#include <jansson.h>
#include <stdint.h>

#include "desired.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *body = json_loadb((const char *)data, size, JSON_DECODE_ANY, &jerr);
    struct agent_desired d;
    char err[256];

    if (body == NULL)
        return 0;
    if (agent_desired_parse(body, &d, err, sizeof(err))) {
        for (size_t i = 0; i < d.n_nodes; i++) {
            FUZZ_ASSERT(agent_desired_valid_id(d.nodes[i].node_id));
            FUZZ_ASSERT(agent_desired_find(&d, d.nodes[i].node_id) != NULL);
        }
        agent_desired_free(&d);
    } else {
        FUZZ_ASSERT(d.n_nodes == 0 && d.nodes == NULL);
    }
    json_decref(body);
    return 0;
}
