/* scheduler.h -- placement arithmetic shared by everything that puts nodes on
 * hosts. Pure functions; the store applies their answers. */
#ifndef CAIRN_SCHED_H
#define CAIRN_SCHED_H

#include <stdbool.h>
#include <stddef.h>

/* The lowest port in [min, max] that is not in used[0..n) (any order), or
 * -1 when the range is full. */
int sched_pick_port(int min, int max, const int *used, size_t n);

/* A host as the store sees it for one request. The strings are borrowed. */
struct sched_host {
    const char *id;            /* opaque, for messages */
    const char *az;            /* availability zone; not NULL when eligible */
    int free_vcpus;            /* capacity minus what is allocated */
    long long free_memory_mib; /* capacity minus what is allocated */
    bool eligible;             /* healthy and has the requested engine line */
};

/* What to place: shards * (1 + replicas) nodes of one node type. */
struct sched_request {
    int shards;           /* >= 1 */
    int replicas;         /* per shard, >= 0 (the API allows 0..5) */
    int vcpus;            /* per node, >= 1 */
    long long memory_mib; /* per node, >= 1 */
    bool multi_az;
    const char *only_host; /* NULL: any host; else the id of the one host the nodes may go to */
    /* Shards added to a running cluster: the AZs of its primaries (one entry
     * each), which the new primaries avoid as the primaries of the request
     * avoid each other -- a preference, not a rule. NULL: none. */
    const char *const *primary_azs;
    size_t n_primary_azs;
};

/* The placement rules (ARCHITECTURE.md §4), as sched_place() follows them and
 * sched_check() verifies them. A host's room is the number of nodes of the
 * request it can take: min(free_vcpus / vcpus, free_memory_mib / memory_mib),
 * 0 when it is not eligible. "The AZs" are those with at least one host with
 * room; A is their number. Node 0 of a shard is its primary.
 *
 *   capacity       a node goes only to an eligible host (with only_host,
 *                  to that host alone: every other host's room is 0), and
 *                  no host takes more nodes than its room;
 *   anti-affinity  no two nodes of one shard on the same host;
 *   primaries      no AZ holds more than ceil(shards / A) primaries, with or
 *                  without multi_az;
 *   multi_az       (with replicas) A >= 2, no replica in its primary's AZ, and
 *                  no AZ holds more than ceil(replicas / (A - 1)) replicas of
 *                  one shard. So when A >= nodes per shard, a shard's nodes
 *                  are in distinct AZs; with fewer AZs (say 2 for 1 + 2) the
 *                  replicas share the other AZs evenly, never the primary's. */

/* Place every node of req on hosts[0..nhosts): host_of[s * (1 + replicas) + k]
 * gets the index into hosts of shard s's node k (k = 0 is the shard's intended
 * primary). host_of has room for shards * (1 + replicas) entries.
 *
 * Returns true with every rule above holding, or false with host_of all -1
 * (nothing placed) and a message in err that names the rule and the numbers,
 * e.g. "not enough capacity: 6 nodes of 2 vCPU / 1403 MiB requested, eligible
 * hosts can take 4" or "multi_az needs at least 2 AZs for 3 nodes per shard;
 * hosts with room are in 1".
 *
 * How, in three passes:
 *   1. whole-request limits: hosts with room, total room, AZs, primaries the
 *      AZs can take -- so the usual refusals name the request's numbers;
 *   2. all primaries, each in the AZ with the fewest primaries so far (counting
 *      the running cluster's, primary_azs, when shards are added); first
 *      choice, with multi_az, AZs outside which the shard's replicas still
 *      find hosts; among equals, when there are replicas, the AZ with the
 *      least room left (the replicas need more room, elsewhere), else the
 *      most;
 *   3. each shard's replicas, each in the allowed AZ holding the fewest of
 *      the shard's nodes (without multi_az a preference, not a rule), then
 *      the most room left. When no host the rules allow has room left, a
 *      replica of an earlier shard moves to a host with room that it may use
 *      and leaves its host to this one.
 * Other ties between AZs go to the most free memory, then the first by name;
 * in an AZ, a node goes to the host with the most room left, then the most
 * free memory, then the lowest index, so hosts fill evenly. The same input
 * always gives the same answer.
 *
 * Cost: a max-heap of hosts per AZ makes it O(H log H + nodes * per * (A +
 * log H)) for H hosts, A AZs and per nodes per shard, plus O(nodes * H) per
 * move in pass 3 (rare). It is greedy, not a search, so some input may make it
 * refuse a placement that exists; the unit tests look for one with exhaustive
 * search on small random inputs and with planted placements on fleets with no
 * room to spare, and find none. What it returns always holds every rule.
 *
 * A request outside the ranges of struct sched_request is a caller's bug
 * (asserted). */
bool sched_place(const struct sched_host *hosts, size_t nhosts, const struct sched_request *req,
                 int *host_of, char *err, size_t errsize);

/* Whether the placement host_of (laid out as sched_place() fills it) holds
 * every rule above for hosts[0..nhosts) as they were before it was applied.
 * On false, err names the first broken rule, the shard or host, and the
 * numbers. For tests, benchmarks and sanity checks before a placement is
 * stored. */
bool sched_check(const struct sched_host *hosts, size_t nhosts, const struct sched_request *req,
                 const int *host_of, char *err, size_t errsize);

/* Where a replacement for a node of one shard goes. The strings are borrowed. */
struct sched_replacement {
    int vcpus;                      /* the node type's, >= 1 */
    long long memory_mib;           /* the node type's, >= 1 */
    const char *const *shard_hosts; /* host ids of the shard's other (live) nodes */
    const char *const *shard_azs;   /* their AZs, in the same order */
    size_t n_shard;
    const char *primary_az; /* the shard's primary's AZ, or NULL when it has none */
    bool multi_az;
};

/* The index into hosts[0..nhosts) of the host for one replacement node of a
 * shard, or -1 with a message in err. The rules of a create, for one node:
 * an eligible host with room, none of the shard's hosts, not the primary's
 * AZ with multi_az; preferring the AZ holding the fewest of the shard's
 * nodes (keeping the shard spread), then the host with the most room, then
 * the most free memory, then the lowest index. Pure. */
int sched_pick_replacement(const struct sched_host *hosts, size_t nhosts,
                           const struct sched_replacement *r, char *err, size_t errsize);

#endif
