/* cluster_spec.h -- the spec of a cluster as users write it: the body of
 * POST/PUT /v1/clusters, its rules and defaults, JSON merge patches of it,
 * which changes are applied, and the even split of the hash slots.
 *
 * Pure: no database, no clock. What needs the catalog (engine_version being
 * a line of the engine, node_type existing) is checked by the caller. */
#ifndef CAIRN_CLUSTER_SPEC_H
#define CAIRN_CLUSTER_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "jspec.h"

/* Limits of the spec's fields. Strings are counted in bytes as jspec counts
 * them, except tag keys and values, counted in Unicode characters. */
#define CSPEC_ID_MAX          40
#define CSPEC_DESCRIPTION_MAX 255
#define CSPEC_NODE_TYPE_MAX   64
#define CSPEC_SHARDS_MAX      1000
#define CSPEC_REPLICAS_MAX    5
#define CSPEC_TAGS_MAX        50
#define CSPEC_TAG_KEY_MAX     128
#define CSPEC_TAG_VALUE_MAX   256
#define CSPEC_AUTH_TOKEN_MIN  16
#define CSPEC_AUTH_TOKEN_MAX  128

/* Maintenance windows: "ddd:hh24:mi-ddd:hh24:mi" in UTC, 60 minutes to
 * 24 hours long. */
#define CSPEC_WINDOW_DEFAULT     "sun:05:00-sun:06:00"
#define CSPEC_WINDOW_MIN_MINUTES 60
#define CSPEC_WINDOW_MAX_MINUTES (24 * 60)
#define CSPEC_MINUTES_PER_WEEK   (7 * 24 * 60)

/* Daily snapshot windows: "hh24:mi-hh24:mi" in UTC, 60 minutes to 24
 * hours long; automatic snapshots are kept up to 35 days. */
#define CSPEC_SNAPSHOT_WINDOW_DEFAULT "03:00-04:00"
#define CSPEC_SNAPSHOT_RETENTION_MAX  35

/* Hash slots of a cluster-mode cluster. */
#define CSPEC_SLOTS 16384

/* The body spec of POST /v1/clusters and PUT /v1/clusters/{id}:
 *
 *   id                  required; 1-40 of a-z, 0-9 and '-', starting with a
 *                       letter, no "--", not ending with '-'
 *   description         string of at most 255 bytes; default ""
 *   engine              required; "redis" or "valkey"
 *   engine_version      required; a line, MAJOR.MINOR ("8.0")
 *   node_type           required; 1-64 bytes
 *   cluster_mode        "enabled" (default) or "disabled"
 *   num_shards          1-500; default 1
 *   replicas_per_shard  0-5; default 1
 *   automatic_failover  boolean; default true in cluster mode (where it is
 *                       required), else true exactly when there are replicas
 *   multi_az            boolean; default the value of automatic_failover
 *   maintenance_window  see cspec_window_parse(); default sun:05:00-sun:06:00
 *   snapshot_window     see cspec_daily_window_parse(); default 03:00-04:00
 *   snapshot_retention_days  0-35: days automatic snapshots are kept; 0
 *                       (the default): none are taken
 *   restore_from        {"snapshot_id": id or name}: the data a new cluster
 *                       starts with; fixed at creation
 *   parameters          object of strings; default {}; see cspec_normalize()
 *   tags                object of strings; default {}; see cspec_normalize()
 *   auth_token          write-only; 16-128 printable ASCII characters other
 *                       than space; never part of the normalized spec
 *
 * jspec_check() with it checks each field alone; cspec_normalize() adds
 * the rules between fields. */
extern const struct jspec_field cspec_create_spec[];

/* The rule of a cluster id (see id above), as a jspec check: for other
 * bodies that name a cluster to be. */
bool cspec_check_id(const json_t *value, char *msg, size_t msgsize);

/* Check a cluster body (POST, PUT, or a stored spec with a merge patch
 * applied) and fill in its defaults.
 *
 * Runs jspec_check() with cspec_create_spec, then the rules between fields,
 * appending one {"field", "message"} object to errors (a JSON array owned
 * by the caller) for every failure; field names are spelled as in the body
 * ("num_shards", "parameters.maxmemory-policy", "tags.team"). A rule is
 * skipped when a field it reads already failed its own check, so one
 * mistake is reported once. The rules:
 *
 *   - num_shards is 1 when cluster_mode is disabled;
 *   - cluster mode needs automatic_failover true and a replica per shard
 *     (with none, the failure names replicas_per_shard);
 *   - automatic_failover true needs replicas_per_shard of at least 1;
 *   - multi_az true needs automatic_failover true;
 *   - maintenance_window: see cspec_window_parse();
 *   - parameters: each value a string, each name either one of Cairn's
 *     managed settings (engine_config.h), its value as
 *     engine_config_managed_check() takes it and in cluster mode if it is
 *     only for that, or a parameter engine_config_param_check() accepts for
 *     the engine and line, and no two names (an alias and its entry) for
 *     one directive;
 *   - tags: at most 50, keys of 1-128 characters, values strings of at most
 *     256 characters.
 *
 * Returns a new object (the caller owns it) with every field of the spec
 * but auth_token, in the order above, each value as sent or defaulted --
 * what is stored and what GET returns. Returns NULL when errors were
 * appended. Normalizing a normalized spec gives an equal object. */
json_t *cspec_normalize(const json_t *body, json_t *errors);

/* The write-only auth_token of a body, or NULL when it has none (or it is
 * not a string). Borrowed from body; check the body with cspec_normalize()
 * first. cspec_normalize() leaves it out of the spec and cspec_diff() never
 * lists it, so a PATCH or PUT handler looks for it in the request itself
 * (see cspec_field_change("auth_token")). */
const char *cspec_auth_token(const json_t *body);

/* Whether value is an AUTH token Cairn takes (16 to 128 printable ASCII
 * characters, no space); false with "must ..." in msg. Pure. */
bool cspec_auth_token_check(const json_t *value, char *msg, size_t msgsize);

/* Apply patch to target as a JSON merge patch (RFC 7396): members of an
 * object patch replace target's, null members remove them, nested objects
 * merge recursively; a patch that is not an object replaces target whole.
 * target may be NULL (absent). Returns a new value; neither argument is
 * changed or shared with the result. */
json_t *cspec_merge_patch(const json_t *target, const json_t *patch);

/* Append to changed_fields (a JSON array owned by the caller) the name of
 * every top-level member whose value differs between the objects before
 * and after, a member present in only one of them included: before's
 * members in their order, then those only in after. Returns whether any
 * differ. */
bool cspec_diff(const json_t *before, const json_t *after, json_t *changed_fields);

/* Route body spec for the cluster routes: any JSON object. Their handlers
 * check it with cspec_normalize() (after merging, for a patch), which
 * reports the spec's rules and the catalog's in one reply. */
extern const struct jspec_field cspec_any_object[];

/* The slots of shard (0-based) of shards, as the inclusive range
 * [*first, *last]: the 16384 slots split evenly and contiguously, shard k
 * starting at round(k * 16384 / shards) with halves rounded up. That is the
 * rule valkey-cli --cluster create follows (3 shards: 0-5460, 5461-10922,
 * 10923-16383), computed exactly: valkey-cli accumulates the boundaries in
 * single precision, which from 78 shards on can move one of them by a slot.
 * The sizes differ by at most one. 1 <= shards <= 16384 and
 * 0 <= shard < shards, or the call asserts. */
void cspec_split_slots(int shards, int shard, int *first, int *last);

/* Parse a maintenance window "ddd:hh24:mi-ddd:hh24:mi" in UTC: days mon,
 * tue, wed, thu, fri, sat, sun (lower case), hours 00-23, minutes 00-59,
 * each exactly two digits. The window may wrap the week
 * ("sat:23:00-sun:01:00" is two hours; "sun:23:00-mon:01:00" too) and must
 * be at least 60 minutes and at most 24 hours long.
 *
 * On success stores the start and end as minutes of the week, Monday 00:00
 * being 0 (so *end < *start when it wraps past Sunday midnight; the length
 * is (end - start) mod CSPEC_MINUTES_PER_WEEK) and returns true. Otherwise
 * writes what is wrong, without the field's name, to msg and returns false,
 * leaving the outputs untouched. Pure. */
bool cspec_window_parse(const char *text, int *start, int *end, char *msg, size_t msgsize);

/* Parse a daily window "hh24:mi-hh24:mi" in UTC (hours 00-23, minutes
 * 00-59), 60 minutes to 24 hours long, wrapping midnight when it ends
 * before it starts: the start and end as minutes of the day. As
 * cspec_window_parse() otherwise. Pure. */
bool cspec_daily_window_parse(const char *text, int *start, int *end, char *msg, size_t msgsize);

/* When the daily window [start, end) that is open at now (epoch seconds,
 * UTC) opened; -1 when it is closed. Pure. */
long long cspec_daily_window_opened(int start, int end, long long now);

/* When the window [start, end) (minutes of the week, as parsed) next opens
 * at or after now (epoch seconds, UTC): now itself while it is open, else
 * the minute it opens. Pure. */
long long cspec_window_next_open(int start, int end, long long now);

#endif
