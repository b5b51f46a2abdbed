/* fuzz_request_body.c -- every request body cairnd parses, as its route
 * declares it: the first input byte picks a route with a body, the rest is
 * the body, parsed as cairnd does (jansson, then the route's jspec), and
 * for the cluster routes normalized, merged as a patch and compared as
 * cairnd's handlers do (controlplane/cluster_spec.h).
 *
 * Promises: a body passes its spec or the errors name a field; a
 * normalized cluster spec normalizes to itself. */
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "cluster_spec.h"
#include "fuzz.h"
#include "jspec.h"

static void check_cluster(const json_t *body)
{
    json_t *errors = json_array();
    json_t *spec = cspec_normalize(body, errors);

    FUZZ_ASSERT((spec == NULL) == (json_array_size(errors) > 0));
    cspec_auth_token(body);
    if (spec != NULL) {
        json_t *again_errors = json_array();
        json_t *again = cspec_normalize(spec, again_errors);
        FUZZ_ASSERT(again != NULL && json_equal(again, spec));
        json_t *merged = cspec_merge_patch(spec, body);
        json_t *changed = json_array();
        cspec_diff(spec, merged, changed);
        json_decref(changed);
        json_decref(merged);
        json_decref(again);
        json_decref(again_errors);
        json_decref(spec);
    }
    json_decref(errors);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct route *with_body[64];
    static size_t n;
    json_error_t jerr;

    if (n == 0) {
        for (size_t i = 0; i < api_route_count && n < 64; i++) {
            if (api_routes[i].body != NULL)
                with_body[n++] = &api_routes[i];
        }
    }
    if (size < 1)
        return 0;
    const struct route *route = with_body[data[0] % n];
    json_t *body = json_loadb((const char *)data + 1, size - 1,
                              JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (body == NULL)
        return 0;
    json_t *errors = json_array();
    if (!jspec_check(body, route->body, errors)) {
        size_t i;
        json_t *e;
        FUZZ_ASSERT(json_array_size(errors) > 0);
        json_array_foreach (errors, i, e)
            FUZZ_ASSERT(json_is_string(json_object_get(e, "field")));
    } else if (route->body == cspec_any_object) {
        check_cluster(body);
    }
    json_decref(errors);
    json_decref(body);
    return 0;
}
