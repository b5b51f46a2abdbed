/* scheduler.c -- placement arithmetic: ports on a host, nodes on hosts. */
#include "scheduler.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

int sched_pick_port(int min, int max, const int *used, size_t n)
{
    if (max < min)
        return -1;
    size_t span = (size_t)(max - min) + 1;
    bool *taken = xcalloc(span, sizeof(bool));
    int port = -1;

    for (size_t i = 0; i < n; i++) {
        if (used[i] >= min && used[i] <= max)
            taken[used[i] - min] = true;
    }
    for (size_t i = 0; i < span; i++) {
        if (!taken[i]) {
            port = min + (int)i;
            break;
        }
    }
    free(taken);
    return port;
}

/* ---- What sched_place and sched_check share: room, AZs, rule limits ---- */

/* The hosts as one request sees them. */
struct zones {
    int *room;         /* [nhosts] nodes the host can take (at most one per shard) */
    int *az;           /* [nhosts] index into name, -1 for a host without room */
    const char **name; /* [n] the AZs with a host with room, sorted */
    int n;
};

struct az_key {
    const char *az;
    size_t host;
};

static int az_key_cmp(const void *a, const void *b)
{
    return strcmp(((const struct az_key *)a)->az, ((const struct az_key *)b)->az);
}

static void check_request(const struct sched_request *req)
{
    assert(req->shards >= 1 && req->replicas >= 0);
    assert(req->vcpus >= 1 && req->memory_mib >= 1);
    (void)req;
}

/* The nodes of req the host can take. A host never takes more than one node
 * per shard, so room is capped at the number of shards. */
static int host_room(const struct sched_host *h, const struct sched_request *req)
{
    if (req->only_host != NULL && strcmp(h->id, req->only_host) != 0)
        return 0;
    if (!h->eligible || h->free_vcpus < req->vcpus || h->free_memory_mib < req->memory_mib)
        return 0;
    long long n = h->free_vcpus / req->vcpus;
    long long by_memory = h->free_memory_mib / req->memory_mib;
    if (by_memory < n)
        n = by_memory;
    return n < req->shards ? (int)n : req->shards;
}

static void zones_init(struct zones *z, const struct sched_host *hosts, size_t nhosts,
                       const struct sched_request *req)
{
    struct az_key *keys = xcalloc(nhosts, sizeof(*keys));
    size_t nkeys = 0;

    z->room = xcalloc(nhosts, sizeof(*z->room));
    z->az = xcalloc(nhosts, sizeof(*z->az));
    z->name = xcalloc(nhosts, sizeof(*z->name));
    z->n = 0;
    for (size_t i = 0; i < nhosts; i++) {
        z->room[i] = host_room(&hosts[i], req);
        z->az[i] = -1;
        if (z->room[i] > 0) {
            assert(hosts[i].az != NULL);
            keys[nkeys++] = (struct az_key){hosts[i].az, i};
        }
    }
    qsort(keys, nkeys, sizeof(*keys), az_key_cmp);
    for (size_t k = 0; k < nkeys; k++) {
        if (z->n == 0 || strcmp(z->name[z->n - 1], keys[k].az) != 0)
            z->name[z->n++] = keys[k].az;
        z->az[keys[k].host] = z->n - 1;
    }
    free(keys);
}

static void zones_free(struct zones *z)
{
    free(z->room);
    free(z->az);
    free(z->name);
}

/* Rule "primaries": the most primaries one AZ may hold. */
static int primaries_per_az(int shards, int naz)
{
    return (shards + naz - 1) / naz;
}

/* Rule "multi_az": the most replicas of one shard one AZ may hold (naz >= 2). */
static int replicas_per_az(int replicas, int naz)
{
    return (replicas + naz - 2) / (naz - 1);
}

static bool multi_az_applies(const struct sched_request *req)
{
    return req->multi_az && req->replicas > 0;
}

static bool fail(char *err, size_t errsize, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail(char *err, size_t errsize, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errsize, fmt, ap);
    va_end(ap);
    return false;
}

static bool fail_multi_az_azs(const struct sched_request *req, int naz, char *err, size_t errsize)
{
    return fail(err, errsize,
                "multi_az needs at least 2 AZs for %d nodes per shard; hosts with room are in %d",
                1 + req->replicas, naz);
}

/* ---- sched_place ---- */

struct placer {
    const struct sched_request *req;
    int per; /* nodes per shard */
    struct zones z;
    long long *memory;    /* [nhosts] free memory left: the tie-break between equal room */
    int *heap;            /* hosts with room left, one max-heap per AZ at heap + start[a] */
    int *start;           /* [z.n] */
    int *len;             /* [z.n] */
    int *az_room;         /* [z.n] room left in the AZ */
    long long *az_memory; /* [z.n] free memory left on its hosts with room */
    int *primaries;       /* [z.n] primaries placed in the AZ */
    int *prior;           /* [z.n] primaries the running cluster has there (primary_azs) */
    int *aside;           /* [per] scratch for take_host */
    int *tried;           /* [per] scratch for place_replicas */
};

/* Heap order: most room left, then most free memory, then lowest index. */
static bool host_before(const struct placer *p, int a, int b)
{
    if (p->z.room[a] != p->z.room[b])
        return p->z.room[a] > p->z.room[b];
    if (p->memory[a] != p->memory[b])
        return p->memory[a] > p->memory[b];
    return a < b;
}

static void sift_down(const struct placer *p, int *heap, int len, int i)
{
    for (;;) {
        int best = i, l = 2 * i + 1, r = 2 * i + 2;
        if (l < len && host_before(p, heap[l], heap[best]))
            best = l;
        if (r < len && host_before(p, heap[r], heap[best]))
            best = r;
        if (best == i)
            return;
        int t = heap[i];
        heap[i] = heap[best];
        heap[best] = t;
        i = best;
    }
}

static void sift_up(const struct placer *p, int *heap, int i)
{
    while (i > 0 && host_before(p, heap[i], heap[(i - 1) / 2])) {
        int parent = (i - 1) / 2, t = heap[i];
        heap[i] = heap[parent];
        heap[parent] = t;
        i = parent;
    }
}

static void heap_push(struct placer *p, int az, int host)
{
    int *heap = p->heap + p->start[az];

    heap[p->len[az]] = host;
    sift_up(p, heap, p->len[az]++);
}

/* Remove and return the host at position i of az's heap. */
static int heap_remove(struct placer *p, int az, int i)
{
    int *heap = p->heap + p->start[az];
    int host = heap[i];

    heap[i] = heap[--p->len[az]];
    if (i < p->len[az]) {
        sift_down(p, heap, p->len[az], i);
        sift_up(p, heap, i);
    }
    return host;
}

static void placer_init(struct placer *p, const struct sched_host *hosts, size_t nhosts,
                        const struct sched_request *req)
{
    zones_init(&p->z, hosts, nhosts, req);
    p->req = req;
    p->per = 1 + req->replicas;
    p->memory = xcalloc(nhosts, sizeof(*p->memory));
    p->heap = xcalloc(nhosts, sizeof(*p->heap));
    p->start = xcalloc((size_t)p->z.n, sizeof(*p->start));
    p->len = xcalloc((size_t)p->z.n, sizeof(*p->len));
    p->az_room = xcalloc((size_t)p->z.n, sizeof(*p->az_room));
    p->az_memory = xcalloc((size_t)p->z.n, sizeof(*p->az_memory));
    p->primaries = xcalloc((size_t)p->z.n, sizeof(*p->primaries));
    p->prior = xcalloc((size_t)p->z.n + 1, sizeof(*p->prior));
    for (size_t i = 0; i < req->n_primary_azs; i++) {
        for (int a = 0; a < p->z.n; a++) {
            if (req->primary_azs[i] != NULL && strcmp(p->z.name[a], req->primary_azs[i]) == 0)
                p->prior[a]++;
        }
    }
    p->aside = xcalloc((size_t)p->per, sizeof(*p->aside));
    p->tried = xcalloc((size_t)p->per, sizeof(*p->tried));

    for (size_t i = 0; i < nhosts; i++) {
        p->memory[i] = hosts[i].free_memory_mib;
        if (p->z.az[i] >= 0) {
            p->len[p->z.az[i]]++;
            p->az_room[p->z.az[i]] += p->z.room[i];
            p->az_memory[p->z.az[i]] += hosts[i].free_memory_mib;
        }
    }
    for (int a = 1; a < p->z.n; a++)
        p->start[a] = p->start[a - 1] + p->len[a - 1];
    memset(p->len, 0, (size_t)p->z.n * sizeof(*p->len));
    for (size_t i = 0; i < nhosts; i++) {
        int a = p->z.az[i];
        if (a >= 0)
            p->heap[p->start[a] + p->len[a]++] = (int)i;
    }
    for (int a = 0; a < p->z.n; a++) {
        for (int i = p->len[a] / 2 - 1; i >= 0; i--)
            sift_down(p, p->heap + p->start[a], p->len[a], i);
    }
}

static void placer_free(struct placer *p)
{
    zones_free(&p->z);
    free(p->memory);
    free(p->heap);
    free(p->start);
    free(p->len);
    free(p->az_room);
    free(p->az_memory);
    free(p->primaries);
    free(p->prior);
    free(p->aside);
    free(p->tried);
}

/* The limits of the whole request, so that the usual refusals name its
 * numbers rather than the shard where a greedy pass ran out. */
static bool check_totals(const struct placer *p, char *err, size_t errsize)
{
    const struct sched_request *req = p->req;
    long long nodes = (long long)req->shards * p->per, room = 0, primaries = 0;
    int hosts_with_room = 0;

    for (int a = 0; a < p->z.n; a++) {
        room += p->az_room[a];
        hosts_with_room += p->len[a];
    }
    if (hosts_with_room > 0 && hosts_with_room < p->per)
        return fail(err, errsize,
                    "no two nodes of a shard on one host: %d nodes per shard need %d hosts with "
                    "room; hosts with room: %d",
                    p->per, p->per, hosts_with_room);
    if (room < nodes)
        return fail(err, errsize,
                    "not enough capacity: %lld nodes of %d vCPU / %lld MiB requested, eligible "
                    "hosts can take %lld",
                    nodes, req->vcpus, req->memory_mib, room);
    if (multi_az_applies(req) && p->z.n < 2)
        return fail_multi_az_azs(req, p->z.n, err, errsize);

    int cap = primaries_per_az(req->shards, p->z.n);
    for (int a = 0; a < p->z.n; a++)
        primaries += p->az_room[a] < cap ? p->az_room[a] : cap;
    if (primaries < req->shards)
        return fail(err, errsize,
                    "primaries spread: with hosts with room in %d AZs, no AZ may hold more than %d "
                    "of %d primaries, and the AZs have room for %lld of them",
                    p->z.n, cap, req->shards, primaries);
    return true;
}

static bool holds(const int *shard, int placed, int host)
{
    for (int k = 0; k < placed; k++) {
        if (shard[k] == host)
            return true;
    }
    return false;
}

/* Count one more node on host, out of az's heap, and put it back if it
 * still has room. */
static void use_room(struct placer *p, int az, int host)
{
    p->z.room[host]--;
    p->memory[host] -= p->req->memory_mib;
    p->az_room[az]--;
    p->az_memory[az] -= p->req->memory_mib;
    if (p->z.room[host] > 0)
        heap_push(p, az, host);
}

/* Take one node's room on the best host of AZ az that holds none of
 * shard[0..placed); the host's index, or -1 when every host with room left
 * in az already holds one. */
static int take_host(struct placer *p, int az, const int *shard, int placed)
{
    int naside = 0, host = -1;

    while (p->len[az] > 0) {
        int h = heap_remove(p, az, 0);
        if (!holds(shard, placed, h)) {
            host = h;
            break;
        }
        p->aside[naside++] = h;
    }
    for (int i = 0; i < naside; i++)
        heap_push(p, az, p->aside[i]);
    if (host >= 0)
        use_room(p, az, host);
    return host;
}

/* Between AZs otherwise equal: the most room left, then the most free
 * memory, then (as the callers scan) the first by name. */
static bool az_before(const struct placer *p, int a, int b)
{
    if (p->az_room[a] != p->az_room[b])
        return p->az_room[a] > p->az_room[b];
    return p->az_memory[a] > p->az_memory[b];
}

/* The hosts that AZs other than az offer one shard's replicas under rule
 * "multi_az" (at most limit each), given all, the sum over every AZ. */
static int replicas_outside(const struct placer *p, int az, int limit, int all)
{
    return all - (p->len[az] < limit ? p->len[az] : limit);
}

/* Whether AZ a (fits: the shard's replicas find hosts outside it) is a
 * better home for the next primary than AZ b: one that fits, then the fewest
 * primaries, then -- when there are replicas, which need more room than the
 * primary and elsewhere -- the least room, else the most. */
static bool primary_az_before(const struct placer *p, int a, bool a_fits, int b, bool b_fits)
{
    if (a_fits != b_fits)
        return a_fits;
    if (p->primaries[a] + p->prior[a] != p->primaries[b] + p->prior[b])
        return p->primaries[a] + p->prior[a] < p->primaries[b] + p->prior[b];
    return p->req->replicas > 0 ? az_before(p, b, a) : az_before(p, a, b);
}

/* The best AZ for the next primary among those that may take one more and
 * have room; -1 if none. */
static int pick_primary_az(const struct placer *p, int cap)
{
    bool multi_az = multi_az_applies(p->req), best_fits = false;
    int limit = multi_az ? replicas_per_az(p->req->replicas, p->z.n) : 0, all = 0, best = -1;

    for (int a = 0; multi_az && a < p->z.n; a++)
        all += p->len[a] < limit ? p->len[a] : limit;
    for (int a = 0; a < p->z.n; a++) {
        if (p->primaries[a] >= cap || p->az_room[a] == 0)
            continue;
        bool fits = !multi_az || replicas_outside(p, a, limit, all) >= p->req->replicas;
        if (best < 0 || primary_az_before(p, a, fits, best, best_fits)) {
            best = a;
            best_fits = fits;
        }
    }
    return best;
}

static void place_primaries(struct placer *p, int *host_of)
{
    int cap = primaries_per_az(p->req->shards, p->z.n);

    for (int s = 0; s < p->req->shards; s++) {
        int a = pick_primary_az(p, cap);
        assert(a >= 0); /* check_totals counted room for every primary */
        host_of[(size_t)s * (size_t)p->per] = take_host(p, a, NULL, 0);
        p->primaries[a]++;
    }
}

static int nodes_in_az(const struct placer *p, const int *shard, int placed, int az)
{
    int n = 0;

    for (int k = 0; k < placed; k++)
        n += p->z.az[shard[k]] == az;
    return n;
}

/* The AZ for the next node of shard[0..placed): one the rules allow, with
 * room left, not in tried[0..ntried), holding the fewest of the shard's
 * nodes; -1 if none. */
static int pick_replica_az(const struct placer *p, const int *shard, int placed, int ntried)
{
    bool multi_az = multi_az_applies(p->req);
    int primary_az = p->z.az[shard[0]];
    int limit = multi_az ? replicas_per_az(p->req->replicas, p->z.n) : p->per;
    int best = -1, best_nodes = 0;

    for (int a = 0; a < p->z.n; a++) {
        if (p->az_room[a] == 0 || (multi_az && a == primary_az) || holds(p->tried, ntried, a))
            continue;
        int n = nodes_in_az(p, shard, placed, a);
        if (n >= limit)
            continue;
        if (best < 0 || n < best_nodes || (n == best_nodes && az_before(p, a, best))) {
            best = a;
            best_nodes = n;
        }
    }
    return best;
}

static bool fail_replica(const struct placer *p, int s, const int *shard, char *err, size_t errsize)
{
    size_t off;
    int n;

    if (multi_az_applies(p->req))
        n = snprintf(err, errsize,
                     "multi_az: no AZ other than its primary's (%s) can take another replica of "
                     "shard %d, with at most %d of its replicas per AZ; room left:",
                     p->z.name[p->z.az[shard[0]]], s, replicas_per_az(p->req->replicas, p->z.n));
    else
        n = snprintf(err, errsize,
                     "no two nodes of a shard on one host: every host with room left holds a "
                     "node of shard %d; room left:",
                     s);
    off = n < 0 ? errsize : (size_t)n;
    for (int a = 0; a < p->z.n && off < errsize; a++) {
        n = snprintf(err + off, errsize - off, "%s %s %d", a ? "," : "", p->z.name[a],
                     p->az_room[a]);
        off = n < 0 ? errsize : off + (size_t)n;
    }
    return false;
}

/* Whether rule "multi_az" lets replica k of shard (whose other nodes are
 * shard[0..n) but k) sit in az; always true without multi_az. */
static bool replica_may_use(const struct placer *p, const int *shard, int n, int k, int az)
{
    if (!multi_az_applies(p->req))
        return true;
    int same = 0;
    for (int j = 1; j < n; j++)
        same += j != k && p->z.az[shard[j]] == az;
    return az != p->z.az[shard[0]] && same < replicas_per_az(p->req->replicas, p->z.n);
}

/* A host with room that replica k of the complete shard other may move to,
 * at *az and heap position *pos; -1 if none. */
static int move_target(const struct placer *p, const int *other, int k, int *az, int *pos)
{
    int best = -1;

    for (int a = 0; a < p->z.n; a++) {
        if (p->len[a] == 0 || !replica_may_use(p, other, p->per, k, a))
            continue;
        const int *heap = p->heap + p->start[a];
        for (int i = 0; i < p->len[a]; i++) {
            if (!holds(other, p->per, heap[i]) && (best < 0 || host_before(p, heap[i], best))) {
                best = heap[i];
                *az = a;
                *pos = i;
            }
        }
    }
    return best;
}

/* When the greedy pass finds no host for replica k of shard s -- the hosts
 * with room all hold one of its nodes, or sit where multi_az forbids it --
 * move a replica of an earlier shard from a host s may use to a host with
 * room that the other shard may use, and give its place to s. Returns that
 * host, or -1 if no single move helps. Rare (room nearly exhausted), so a
 * plain scan: O(nodes * hosts) at worst. */
static int make_room(struct placer *p, int *host_of, int s, int k)
{
    const int *shard = host_of + (size_t)s * (size_t)p->per;

    for (int t = 0; t < s; t++) {
        int *other = host_of + (size_t)t * (size_t)p->per;
        for (int r = 1; r < p->per; r++) {
            int x = other[r], az, pos;
            if (holds(shard, k, x) || !replica_may_use(p, shard, k, k, p->z.az[x]))
                continue;
            int y = move_target(p, other, r, &az, &pos);
            if (y < 0)
                continue;
            use_room(p, az, heap_remove(p, az, pos));
            other[r] = y;
            return x;
        }
    }
    return -1;
}

static bool place_replicas(struct placer *p, int *host_of, int s, char *err, size_t errsize)
{
    int *shard = host_of + (size_t)s * (size_t)p->per;

    for (int k = 1; k < p->per; k++) {
        int ntried = 0;
        shard[k] = -1;
        while (shard[k] < 0) {
            int a = pick_replica_az(p, shard, k, ntried);
            if (a < 0)
                break;
            shard[k] = take_host(p, a, shard, k);
            /* A failed AZ holds one of the shard's k hosts: at most k tries. */
            if (shard[k] < 0)
                p->tried[ntried++] = a;
        }
        if (shard[k] < 0)
            shard[k] = make_room(p, host_of, s, k);
        if (shard[k] < 0)
            return fail_replica(p, s, shard, err, errsize);
    }
    return true;
}

bool sched_place(const struct sched_host *hosts, size_t nhosts, const struct sched_request *req,
                 int *host_of, char *err, size_t errsize)
{
    struct placer p;
    size_t nodes = (size_t)req->shards * (size_t)(1 + req->replicas);
    bool ok;

    check_request(req);
    placer_init(&p, hosts, nhosts, req);
    ok = check_totals(&p, err, errsize);
    if (ok) {
        place_primaries(&p, host_of);
        for (int s = 0; s < req->shards && ok; s++)
            ok = place_replicas(&p, host_of, s, err, errsize);
    }
    if (!ok) {
        for (size_t i = 0; i < nodes; i++)
            host_of[i] = -1;
    }
    placer_free(&p);
    return ok;
}

/* ---- sched_check ---- */

/* Rule "capacity": every node on an eligible host (the one asked, with
 * only_host), no host beyond its room. */
static bool check_hosts(const struct sched_host *hosts, size_t nhosts,
                        const struct sched_request *req, const int *host_of, char *err,
                        size_t errsize)
{
    int per = 1 + req->replicas;
    size_t nodes = (size_t)req->shards * (size_t)per;
    long long *used = xcalloc(nhosts, sizeof(*used));
    bool ok = true;

    for (size_t i = 0; i < nodes && ok; i++) {
        int h = host_of[i], s = (int)(i / (size_t)per), k = (int)(i % (size_t)per);
        if (h < 0 || (size_t)h >= nhosts)
            ok = fail(err, errsize, "node %d of shard %d is on host index %d; there are %zu hosts",
                      k, s, h, nhosts);
        else if (!hosts[h].eligible)
            ok = fail(err, errsize, "node %d of shard %d is on host %s, which is not eligible", k,
                      s, hosts[h].id);
        else if (req->only_host != NULL && strcmp(hosts[h].id, req->only_host) != 0)
            ok = fail(err, errsize, "node %d of shard %d is on host %s, not on host %s as asked", k,
                      s, hosts[h].id, req->only_host);
        else
            used[h]++;
    }
    for (size_t h = 0; h < nhosts && ok; h++) {
        if (used[h] > 0 && (used[h] * req->vcpus > hosts[h].free_vcpus ||
                            used[h] * req->memory_mib > hosts[h].free_memory_mib))
            ok = fail(err, errsize,
                      "not enough capacity: host %s takes %lld nodes of %d vCPU / %lld MiB with "
                      "%d vCPU / %lld MiB free",
                      hosts[h].id, used[h], req->vcpus, req->memory_mib, hosts[h].free_vcpus,
                      hosts[h].free_memory_mib);
    }
    free(used);
    return ok;
}

/* Rules "anti-affinity" and "multi_az" for one shard, whose hosts all have
 * room (check_hosts passed). */
static bool check_shard(const struct sched_host *hosts, const struct zones *z,
                        const struct sched_request *req, int s, const int *shard, char *err,
                        size_t errsize)
{
    int per = 1 + req->replicas;

    for (int k = 1; k < per; k++) {
        for (int j = 0; j < k; j++) {
            if (shard[j] == shard[k])
                return fail(err, errsize,
                            "no two nodes of a shard on one host: nodes %d and %d of shard %d "
                            "are on host %s",
                            j, k, s, hosts[shard[k]].id);
        }
    }
    if (!multi_az_applies(req))
        return true;
    int limit = replicas_per_az(req->replicas, z->n);
    for (int k = 1; k < per; k++) {
        int az = z->az[shard[k]], same = 0;
        if (az == z->az[shard[0]])
            return fail(err, errsize, "multi_az: replica %d of shard %d is in its primary's AZ %s",
                        k, s, z->name[az]);
        for (int j = 1; j < per; j++)
            same += z->az[shard[j]] == az;
        if (same > limit)
            return fail(err, errsize,
                        "multi_az: shard %d has %d replicas in %s; at most %d of its %d replicas "
                        "may share an AZ when %d AZs have room",
                        s, same, z->name[az], limit, req->replicas, z->n);
    }
    return true;
}

/* Rule "primaries". */
static bool check_primaries(const struct zones *z, const struct sched_request *req,
                            const int *host_of, char *err, size_t errsize)
{
    int *count = xcalloc((size_t)z->n, sizeof(*count));
    int cap = primaries_per_az(req->shards, z->n), per = 1 + req->replicas;
    bool ok = true;

    for (int s = 0; s < req->shards; s++)
        count[z->az[host_of[(size_t)s * (size_t)per]]]++;
    for (int a = 0; a < z->n && ok; a++) {
        if (count[a] > cap)
            ok = fail(err, errsize,
                      "primaries spread: %s holds %d of %d primaries; with hosts with room in %d "
                      "AZs, no AZ may hold more than %d",
                      z->name[a], count[a], req->shards, z->n, cap);
    }
    free(count);
    return ok;
}

bool sched_check(const struct sched_host *hosts, size_t nhosts, const struct sched_request *req,
                 const int *host_of, char *err, size_t errsize)
{
    struct zones z;
    int per = 1 + req->replicas;
    bool ok;

    check_request(req);
    if (!check_hosts(hosts, nhosts, req, host_of, err, errsize))
        return false;
    zones_init(&z, hosts, nhosts, req);
    ok = !multi_az_applies(req) || z.n >= 2 || fail_multi_az_azs(req, z.n, err, errsize);
    for (int s = 0; s < req->shards && ok; s++)
        ok = check_shard(hosts, &z, req, s, host_of + (size_t)s * (size_t)per, err, errsize);
    ok = ok && check_primaries(&z, req, host_of, err, errsize);
    zones_free(&z);
    return ok;
}

/* ---- one replacement ----------------------------------------------------- */

static bool in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (list[i] != NULL && strcmp(list[i], s) == 0)
            return true;
    }
    return false;
}

static size_t count_in(const char *s, const char *const *list, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += list[i] != NULL && strcmp(list[i], s) == 0;
    return c;
}

int sched_pick_replacement(const struct sched_host *hosts, size_t nhosts,
                           const struct sched_replacement *r, char *err, size_t errsize)
{
    struct sched_request one = {
        .shards = 1, .replicas = 0, .vcpus = r->vcpus, .memory_mib = r->memory_mib};
    int best = -1;
    size_t best_share = 0;
    bool any_room = false;

    for (size_t i = 0; i < nhosts; i++) {
        const struct sched_host *h = &hosts[i];
        if (host_room(h, &one) == 0)
            continue;
        any_room = true;
        if (in_list(h->id, r->shard_hosts, r->n_shard))
            continue; /* anti-affinity */
        if (r->multi_az && r->primary_az != NULL && strcmp(h->az, r->primary_az) == 0)
            continue; /* never in the primary's AZ */
        size_t share = count_in(h->az, r->shard_azs, r->n_shard);
        const struct sched_host *b = best >= 0 ? &hosts[best] : NULL;
        if (b == NULL || share < best_share ||
            (share == best_share && (host_room(h, &one) > host_room(b, &one) ||
                                     (host_room(h, &one) == host_room(b, &one) &&
                                      h->free_memory_mib > b->free_memory_mib)))) {
            best = (int)i;
            best_share = share;
        }
    }
    if (best >= 0)
        return best;
    if (!any_room)
        snprintf(err, errsize,
                 "not enough capacity: no eligible host can take a node of %d vCPU / "
                 "%lld MiB",
                 r->vcpus, r->memory_mib);
    else if (r->multi_az && r->primary_az != NULL)
        snprintf(err, errsize,
                 "no eligible host with room outside the shard's hosts and its "
                 "primary's AZ (%s); multi_az keeps replicas out of it",
                 r->primary_az);
    else
        snprintf(err, errsize, "every eligible host with room already holds a node of the shard");
    return -1;
}
