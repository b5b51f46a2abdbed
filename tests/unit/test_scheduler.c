/* test_scheduler.c -- placement arithmetic (controlplane/scheduler.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "scheduler.h"
#include "xalloc.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

static void test_pick_port_lowest_free(void **state)
{
    const int used[] = {7001, 7000, 7003};
    (void)state;
    assert_int_equal(sched_pick_port(7000, 7099, NULL, 0), 7000);
    assert_int_equal(sched_pick_port(7000, 7099, used, 3), 7002);
    assert_int_equal(sched_pick_port(7000, 7001, used, 3), -1);
    assert_int_equal(sched_pick_port(7003, 7003, used, 3), -1);
    assert_int_equal(sched_pick_port(7003, 7004, used, 3), 7004);
}

static void test_pick_port_ignores_ports_outside_the_range(void **state)
{
    const int used[] = {80, 6379, 65535, -1};
    (void)state;
    assert_int_equal(sched_pick_port(6379, 6380, used, 4), 6380);
    assert_int_equal(sched_pick_port(1024, 1024, used, 4), 1024);
}

static void test_pick_port_empty_range(void **state)
{
    (void)state;
    assert_int_equal(sched_pick_port(7001, 7000, NULL, 0), -1);
}

/* ---- sched_place and sched_check ---- */

#define MAX_NODES 64

/* Two hosts per AZ in three AZs, 8 vCPU / 32 GiB free each. */
static const struct sched_host three_azs[] = {
    {"a1", "az-a", 8, 32768, true}, {"a2", "az-a", 8, 32768, true}, {"b1", "az-b", 8, 32768, true},
    {"b2", "az-b", 8, 32768, true}, {"c1", "az-c", 8, 32768, true}, {"c2", "az-c", 8, 32768, true},
};

static size_t nodes_of(const struct sched_request *req)
{
    return (size_t)req->shards * (size_t)(1 + req->replicas);
}

/* Place, asserting success (with the message when it fails) and that
 * sched_check agrees. */
static void place(const struct sched_host *hosts, size_t n, const struct sched_request *req,
                  int *host_of)
{
    char err[512] = "";

    if (!sched_place(hosts, n, req, host_of, err, sizeof(err)))
        fail_msg("sched_place refused: %s", err);
    if (!sched_check(hosts, n, req, host_of, err, sizeof(err)))
        fail_msg("sched_check rejects sched_place's answer: %s", err);
}

/* Assert that sched_place refuses with exactly want and places nothing. */
static void refuse(const struct sched_host *hosts, size_t n, const struct sched_request *req,
                   const char *want)
{
    int host_of[MAX_NODES];
    char err[512] = "";

    assert_true(nodes_of(req) <= MAX_NODES);
    for (size_t i = 0; i < nodes_of(req); i++)
        host_of[i] = 99;
    assert_false(sched_place(hosts, n, req, host_of, err, sizeof(err)));
    assert_string_equal(err, want);
    for (size_t i = 0; i < nodes_of(req); i++)
        assert_int_equal(host_of[i], -1);
}

static const char *az_of(const struct sched_host *hosts, int host)
{
    assert_in_range(host, 0, 1 << 20);
    return hosts[host].az;
}

static void test_place_one_node(void **state)
{
    const struct sched_host hosts[] = {
        {"small", "az-a", 8, 4096, true},
        {"roomy", "az-b", 8, 16384, true},
        {"middle", "az-c", 8, 8192, true},
    };
    const struct sched_request req = {.shards = 1, .vcpus = 2, .memory_mib = 1024};
    int host_of[1];

    (void)state;
    place(hosts, LEN(hosts), &req, host_of);
    assert_int_equal(host_of[0], 1); /* the most free memory */
}

static void test_place_fills_hosts_evenly(void **state)
{
    const struct sched_host hosts[] = {
        {"h0", "az-a", 8, 8192, true},
        {"h1", "az-a", 8, 8192, true},
        {"tiny", "az-a", 2, 2048, true},
    };
    const struct sched_request req = {.shards = 5, .vcpus = 2, .memory_mib = 1024};
    const int want[] = {0, 1, 0, 1, 0};
    int host_of[5];

    (void)state;
    place(hosts, LEN(hosts), &req, host_of);
    assert_memory_equal(host_of, want, sizeof(want));
}

static void test_place_three_shards_over_three_azs(void **state)
{
    const struct sched_request req = {
        .shards = 3, .replicas = 1, .vcpus = 2, .memory_mib = 4096, .multi_az = true};
    int host_of[6];

    (void)state;
    place(three_azs, LEN(three_azs), &req, host_of);
    /* one primary per AZ */
    assert_string_equal(az_of(three_azs, host_of[0]), "az-a");
    assert_string_equal(az_of(three_azs, host_of[2]), "az-b");
    assert_string_equal(az_of(three_azs, host_of[4]), "az-c");
    for (int s = 0; s < 3; s++)
        assert_string_not_equal(az_of(three_azs, host_of[2 * s]),
                                az_of(three_azs, host_of[2 * s + 1]));
}

/* Shards added to a running cluster go first to the AZs its primaries are
 * not in, as a create's primaries avoid each other. */
static void test_added_shards_avoid_the_running_primaries(void **state)
{
    const char *const running[] = {"az-a", "az-b"};
    struct sched_request req = {.shards = 1,
                                .replicas = 1,
                                .vcpus = 2,
                                .memory_mib = 4096,
                                .multi_az = true,
                                .primary_azs = running,
                                .n_primary_azs = 2};
    int host_of[4];

    (void)state;
    place(three_azs, LEN(three_azs), &req, host_of);
    assert_string_equal(az_of(three_azs, host_of[0]), "az-c");
    /* Two more, to four shards over three AZs: one in az-c, one anywhere else. */
    const char *const three[] = {"az-a", "az-b", "az-c"};
    req.shards = 2;
    req.primary_azs = three;
    req.n_primary_azs = 3;
    place(three_azs, LEN(three_azs), &req, host_of);
    assert_string_not_equal(az_of(three_azs, host_of[0]), az_of(three_azs, host_of[2]));
}

static void test_place_without_multi_az_still_spreads_replicas(void **state)
{
    const struct sched_request req = {.shards = 3, .replicas = 1, .vcpus = 2, .memory_mib = 4096};
    int host_of[6];

    (void)state;
    place(three_azs, LEN(three_azs), &req, host_of);
    for (int s = 0; s < 3; s++)
        assert_string_not_equal(az_of(three_azs, host_of[2 * s]),
                                az_of(three_azs, host_of[2 * s + 1]));
}

static void test_place_refuses_without_capacity(void **state)
{
    const struct sched_host hosts[] = {
        {"h0", "az-a", 4, 4096, true}, /* room for 2 of 1403 MiB */
        {"h1", "az-b", 4, 2806, true}, /* room for 2 */
        {"h2", "az-c", 1, 8192, true}, /* no room: 1 vCPU */
    };
    const struct sched_request req = {.shards = 3, .replicas = 1, .vcpus = 2, .memory_mib = 1403};

    (void)state;
    refuse(hosts, LEN(hosts), &req,
           "not enough capacity: 6 nodes of 2 vCPU / 1403 MiB requested, eligible hosts can "
           "take 4");
    refuse(hosts, 0, &req,
           "not enough capacity: 6 nodes of 2 vCPU / 1403 MiB requested, eligible hosts can "
           "take 0");
}

static void test_place_skips_ineligible_hosts(void **state)
{
    const struct sched_host hosts[] = {
        {"huge-but-down", "az-a", 64, 262144, false},
        {"a1", "az-a", 4, 8192, true},
        {"b1", "az-b", 4, 8192, true},
        {"no-engine", "az-c", 64, 262144, false},
    };
    const struct sched_request req = {.shards = 2, .replicas = 1, .vcpus = 2, .memory_mib = 1024};
    int host_of[4];

    (void)state;
    place(hosts, LEN(hosts), &req, host_of);
    for (int i = 0; i < 4; i++)
        assert_in_range(host_of[i], 1, 2);
    refuse(hosts, 1, &req,
           "not enough capacity: 4 nodes of 2 vCPU / 1024 MiB requested, eligible hosts can "
           "take 0");
}

static void test_place_multi_az_needs_two_azs(void **state)
{
    const struct sched_host hosts[] = {
        {"a1", "az-a", 8, 32768, true},
        {"a2", "az-a", 8, 32768, true},
        {"b1", "az-b", 8, 32768, false}, /* not eligible */
        {"c1", "az-c", 0, 0, true},      /* full */
    };
    struct sched_request req = {
        .shards = 1, .replicas = 1, .vcpus = 2, .memory_mib = 1024, .multi_az = true};
    int host_of[2];

    (void)state;
    refuse(hosts, LEN(hosts), &req,
           "multi_az needs at least 2 AZs for 2 nodes per shard; hosts with room are in 1");
    req.multi_az = false;
    place(hosts, LEN(hosts), &req, host_of);
    assert_int_equal(host_of[0], 0);
    assert_int_equal(host_of[1], 1);
}

static void test_place_two_azs_one_primary_two_replicas(void **state)
{
    const struct sched_host hosts[] = {
        {"a1", "az-a", 8, 32768, true},
        {"a2", "az-a", 8, 32768, true},
        {"b1", "az-b", 8, 32768, true},
        {"b2", "az-b", 8, 32768, true},
    };
    const struct sched_request req = {
        .shards = 2, .replicas = 2, .vcpus = 2, .memory_mib = 1024, .multi_az = true};
    int host_of[6];

    (void)state;
    place(hosts, LEN(hosts), &req, host_of);
    for (int s = 0; s < 2; s++) {
        const char *primary = az_of(hosts, host_of[3 * s]);
        assert_string_equal(primary, s == 0 ? "az-a" : "az-b");
        for (int k = 1; k < 3; k++)
            assert_string_not_equal(az_of(hosts, host_of[3 * s + k]), primary);
    }
    /* With one host in az-b, the primary goes there and the replicas to az-a. */
    const struct sched_request one = {
        .shards = 1, .replicas = 2, .vcpus = 2, .memory_mib = 1024, .multi_az = true};
    place(hosts, 3, &one, host_of);
    assert_int_equal(host_of[0], 2);
    assert_int_equal(host_of[1], 0);
    assert_int_equal(host_of[2], 1);
}

static void test_place_multi_az_names_the_full_az(void **state)
{
    const struct sched_host hosts[] = {
        {"a1", "az-a", 8, 32768, true}, {"a2", "az-a", 8, 32768, true},
        {"b1", "az-b", 8, 32768, true}, {"b2", "az-b", 8, 32768, true},
        {"c1", "az-c", 2, 32768, true}, /* room for one node */
    };
    const struct sched_request req = {
        .shards = 2, .replicas = 2, .vcpus = 2, .memory_mib = 1024, .multi_az = true};

    (void)state;
    refuse(hosts, LEN(hosts), &req,
           "multi_az: no AZ other than its primary's (az-a) can take another replica of shard 1, "
           "with at most 1 of its replicas per AZ; room left: az-a 2, az-b 2, az-c 0");
}

static void test_place_one_big_host_takes_one_node_per_shard(void **state)
{
    struct sched_host hosts[] = {
        {"big", "az-a", 64, 262144, true},
        {"small", "az-a", 8, 8192, true},
    };
    struct sched_request req = {.shards = 1, .replicas = 2, .vcpus = 2, .memory_mib = 1024};
    int host_of[6];

    (void)state;
    refuse(hosts, LEN(hosts), &req,
           "no two nodes of a shard on one host: 3 nodes per shard need 3 hosts with room; hosts "
           "with room: 2");

    req.shards = 3;
    req.replicas = 1;
    place(hosts, LEN(hosts), &req, host_of);
    for (int s = 0; s < 3; s++)
        assert_int_not_equal(host_of[2 * s], host_of[2 * s + 1]);

    hosts[1].free_vcpus = 2; /* room for one: big counts for one node per shard */
    refuse(hosts, LEN(hosts), &req,
           "not enough capacity: 6 nodes of 2 vCPU / 1024 MiB requested, eligible hosts can "
           "take 4");
}

static void test_place_moves_a_replica_to_free_a_host(void **state)
{
    /* Placed in turn, shard 2's replica would find room only on its own
     * primary's host; a replica of an earlier shard moves to make room. */
    const struct sched_host hosts[] = {
        {"h0", "az-a", 4, 4096, true},
        {"h1", "az-a", 4, 4096, true},
        {"h2", "az-a", 4, 4096, true},
    };
    const struct sched_request req = {.shards = 3, .replicas = 1, .vcpus = 2, .memory_mib = 2048};
    int host_of[6], used[3] = {0};

    (void)state;
    place(hosts, LEN(hosts), &req, host_of);
    for (int i = 0; i < 6; i++)
        used[host_of[i]]++;
    assert_int_equal(used[0], 2);
    assert_int_equal(used[1], 2);
    assert_int_equal(used[2], 2);
}

static void count_primaries(const struct sched_host *hosts, const struct sched_request *req,
                            const int *host_of, int count[3])
{
    memset(count, 0, 3 * sizeof(int));
    for (int s = 0; s < req->shards; s++)
        count[az_of(hosts, host_of[s * (1 + req->replicas)])[3] - 'a']++;
}

static void test_place_caps_primaries_per_az(void **state)
{
    struct sched_host hosts[] = {
        {"roomy", "az-a", 64, 262144, true}, {"b1", "az-b", 4, 8192, true}, /* room for 2 */
        {"c1", "az-c", 4, 8192, true},       {"a2", "az-a", 64, 262144, true},
        {"b2", "az-b", 64, 262144, true},
    };
    struct sched_request req = {.shards = 6, .vcpus = 2, .memory_mib = 1024};
    int host_of[14], count[3];

    (void)state;
    place(hosts, 3, &req, host_of);
    count_primaries(hosts, &req, host_of, count);
    assert_int_equal(count[0], 2);
    assert_int_equal(count[1], 2);
    assert_int_equal(count[2], 2);

    req.shards = 7;
    req.replicas = 1;
    place(hosts, LEN(hosts), &req, host_of);
    count_primaries(hosts, &req, host_of, count);
    assert_int_equal(count[2], 2); /* all c1 has room for */
    assert_true(count[0] <= 3 && count[1] <= 3);

    hosts[2].free_vcpus = 2; /* c1: room for one */
    req.shards = 6;
    req.replicas = 0;
    refuse(hosts, 3, &req,
           "primaries spread: with hosts with room in 3 AZs, no AZ may hold more than 2 of 6 "
           "primaries, and the AZs have room for 5 of them");
}

/* A fleet of n hosts over three AZs with uneven free capacity (a fixed
 * pseudo-random sequence) and every 97th host ineligible. */
struct fleet {
    struct sched_host *hosts;
    char (*ids)[24];
    size_t n;
};

static void fleet_init(struct fleet *f, size_t n)
{
    static const char *const azs[] = {"az-a", "az-b", "az-c"};
    unsigned r = 12345;

    f->n = n;
    f->hosts = xcalloc(n, sizeof(*f->hosts));
    f->ids = xcalloc(n, sizeof(*f->ids));
    for (size_t i = 0; i < n; i++) {
        r = r * 1103515245u + 12345u;
        snprintf(f->ids[i], sizeof(f->ids[i]), "h%zu", i);
        f->hosts[i] = (struct sched_host){f->ids[i], azs[i % 3], 16 - 2 * (int)((r >> 16) % 4),
                                          65536 - 4096 * (long long)((r >> 8) % 12), i % 97 != 0};
    }
}

static void fleet_free(struct fleet *f)
{
    free(f->hosts);
    free(f->ids);
}

static void test_place_thousand_shards(void **state)
{
    static const struct sched_request reqs[] = {
        {.shards = 1000, .replicas = 1, .vcpus = 2, .memory_mib = 6144, .multi_az = true},
        {.shards = 1000, .replicas = 2, .vcpus = 2, .memory_mib = 6144, .multi_az = true},
        {.shards = 1000, .replicas = 5, .vcpus = 1, .memory_mib = 3072, .multi_az = true},
        {.shards = 1000, .replicas = 1, .vcpus = 2, .memory_mib = 6144},
    };
    struct fleet f;

    (void)state;
    fleet_init(&f, 2000);
    for (size_t i = 0; i < LEN(reqs); i++) {
        int *host_of = xcalloc(nodes_of(&reqs[i]), sizeof(int)), count[3];
        place(f.hosts, f.n, &reqs[i], host_of);
        count_primaries(f.hosts, &reqs[i], host_of, count);
        for (int a = 0; a < 3; a++)
            assert_in_range(count[a], 333, 334);
        free(host_of);
    }
    fleet_free(&f);
}

static void test_place_fills_a_fleet_to_the_last_node(void **state)
{
    const struct sched_request req = {
        .shards = 1000, .replicas = 1, .vcpus = 2, .memory_mib = 4096, .multi_az = true};
    int *host_of = xcalloc(nodes_of(&req), sizeof(int));
    struct fleet f;

    (void)state;
    fleet_init(&f, 2000);
    for (size_t i = 0; i < f.n; i++) { /* every host takes exactly one node */
        f.hosts[i].free_vcpus = 2;
        f.hosts[i].free_memory_mib = 4096 + (long long)i;
        f.hosts[i].eligible = true;
    }
    place(f.hosts, f.n, &req, host_of);
    f.hosts[7].eligible = false;
    char err[256];
    assert_false(sched_place(f.hosts, f.n, &req, host_of, err, sizeof(err)));
    assert_string_equal(err, "not enough capacity: 2000 nodes of 2 vCPU / 4096 MiB requested, "
                             "eligible hosts can take 1999");
    free(host_of);
    fleet_free(&f);
}

static void test_place_is_deterministic(void **state)
{
    const struct sched_request req = {
        .shards = 1000, .replicas = 2, .vcpus = 2, .memory_mib = 6144, .multi_az = true};
    int *first = xcalloc(nodes_of(&req), sizeof(int));
    int *again = xcalloc(nodes_of(&req), sizeof(int));
    struct fleet f;

    (void)state;
    fleet_init(&f, 2000);
    place(f.hosts, f.n, &req, first);
    place(f.hosts, f.n, &req, again);
    assert_memory_equal(first, again, nodes_of(&req) * sizeof(int));
    free(first);
    free(again);
    fleet_free(&f);
}

/* A pseudo-random number in [0, n), the same on every platform. */
static int next_rand(unsigned *r, int n)
{
    *r = *r * 1103515245u + 12345u;
    return (int)((*r >> 16) % (unsigned)n);
}

/* Whether any placement of nodes [i, nodes) on hosts[0..n) passes sched_check. */
static bool exists_placement(const struct sched_host *hosts, size_t n,
                             const struct sched_request *req, int *host_of, size_t i)
{
    if (i == nodes_of(req))
        return sched_check(hosts, n, req, host_of, NULL, 0);
    for (host_of[i] = 0; (size_t)host_of[i] < n; host_of[i]++) {
        if (exists_placement(hosts, n, req, host_of, i + 1))
            return true;
    }
    return false;
}

/* Small random inputs, tight on room, AZs and hosts: sched_place places
 * whenever exhaustive search finds a placement, and refuses otherwise. */
static void test_place_finds_what_exhaustive_search_finds(void **state)
{
    static const char *const azs[] = {"az-a", "az-b", "az-c"};
    struct sched_host hosts[6];
    unsigned r = 2026;
    int placed = 0;

    (void)state;
    for (int round = 0; round < 1500; round++) {
        struct sched_request req = {.shards = 1 + next_rand(&r, 3),
                                    .replicas = next_rand(&r, 3),
                                    .vcpus = 1,
                                    .memory_mib = 1,
                                    .multi_az = next_rand(&r, 2)};
        size_t n = 2 + (size_t)next_rand(&r, 4);
        int naz = 1 + next_rand(&r, 3), got[7], any[7];
        char err[512] = "";

        if (nodes_of(&req) > 6)
            continue;
        for (size_t h = 0; h < n; h++)
            hosts[h] = (struct sched_host){"h", azs[next_rand(&r, naz)], next_rand(&r, 4),
                                           1 + next_rand(&r, 4), next_rand(&r, 8) != 0};
        bool ok = sched_place(hosts, n, &req, got, err, sizeof(err));
        if (ok != exists_placement(hosts, n, &req, any, 0))
            fail_msg("round %d: sched_place %s (%s) but exhaustive search %s", round,
                     ok ? "placed" : "refused", err, ok ? "finds none" : "finds one");
        if (ok && !sched_check(hosts, n, &req, got, err, sizeof(err)))
            fail_msg("round %d: %s", round, err);
        placed += ok;
    }
    assert_in_range(placed, 300, 1200); /* both outcomes are exercised */
}

/* Plant a random placement that holds the rules onto a fleet of up to 32
 * hosts in 2 to 4 AZs, then give each host exactly the room it uses. False
 * when the random choices dead-end (the caller draws again). */
static bool plant(unsigned *r, struct sched_host *hosts, size_t *n, struct sched_request *req,
                  int *host_of)
{
    static const char *const azs[] = {"az-a", "az-b", "az-c", "az-d"};
    int naz = 2 + next_rand(r, 3), per = 1 + req->replicas, slots[4 * 61];
    int cap = (req->shards + naz - 1) / naz, q = (req->replicas + naz - 2) / (naz - 1), nslots = 0;

    *n = 0;
    for (int a = 0; a < naz; a++) {
        for (int k = 1 + next_rand(r, 8); k > 0; k--)
            hosts[(*n)++] = (struct sched_host){"h", azs[a], 0, 0, true};
        for (int c = 0; c < cap; c++)
            slots[nslots++] = a; /* primaries: a shuffled deck with cap cards per AZ */
    }
    for (int i = nslots - 1; i > 0; i--) {
        int j = next_rand(r, i + 1), t = slots[i];
        slots[i] = slots[j];
        slots[j] = t;
    }
    for (int s = 0; s < req->shards; s++) {
        int *shard = host_of + s * per, in_az[4] = {0};
        for (int k = 0; k < per; k++) {
            int h = -1;
            for (int tries = 0; tries < 40 && h < 0; tries++) {
                int c = next_rand(r, (int)*n), a = (int)(strchr("abcd", hosts[c].az[3]) - "abcd");
                bool taken = false;
                for (int j = 0; j < k; j++)
                    taken = taken || shard[j] == c;
                if (taken || (k == 0 && a != slots[s]) ||
                    (k > 0 && req->multi_az && (a == slots[s] || in_az[a] >= q)))
                    continue;
                h = c;
                in_az[a] += k > 0;
            }
            if (h < 0)
                return false;
            shard[k] = h;
            hosts[h].free_vcpus += req->vcpus;
            hosts[h].free_memory_mib += req->memory_mib;
        }
    }
    return true;
}

/* Fleets with no room to spare, where a placement is known to exist. */
static void test_place_finds_a_planted_placement(void **state)
{
    struct sched_host hosts[32];
    int planted[60 * 4], got[60 * 4];
    unsigned r = 7;
    int rounds = 0;
    char err[512] = "";

    (void)state;
    while (rounds < 1000) {
        struct sched_request req = {.shards = 1 + next_rand(&r, 60),
                                    .replicas = next_rand(&r, 4),
                                    .vcpus = 2,
                                    .memory_mib = 1024,
                                    .multi_az = next_rand(&r, 2)};
        size_t n;
        if (!plant(&r, hosts, &n, &req, planted))
            continue;
        rounds++;
        if (!sched_check(hosts, n, &req, planted, err, sizeof(err)))
            fail_msg("round %d: the planted placement breaks a rule: %s", rounds, err);
        if (!sched_place(hosts, n, &req, got, err, sizeof(err)))
            fail_msg("round %d: sched_place refused (%s) though a placement exists", rounds, err);
    }
}

/* Assert that sched_check rejects host_of with a message containing want. */
static void check_rejects(const struct sched_host *hosts, size_t n, const struct sched_request *req,
                          const int *host_of, const char *want)
{
    char err[512] = "";

    assert_false(sched_check(hosts, n, req, host_of, err, sizeof(err)));
    if (strstr(err, want) == NULL)
        fail_msg("\"%s\" does not contain \"%s\"", err, want);
}

static void test_check_finds_each_broken_rule(void **state)
{
    struct sched_host hosts[LEN(three_azs) + 2];
    struct sched_request req = {
        .shards = 3, .replicas = 1, .vcpus = 2, .memory_mib = 4096, .multi_az = true};
    /* a1 b2 | b1 a2 | c1 a1: valid */
    const int good[] = {0, 3, 2, 1, 4, 0};
    int bad[6];

    (void)state;
    memcpy(hosts, three_azs, sizeof(three_azs));
    hosts[6] = (struct sched_host){"down", "az-c", 8, 32768, false};
    hosts[7] = (struct sched_host){"overcommitted", "az-c", -2, -1024, true}; /* unused */
    assert_true(sched_check(hosts, LEN(hosts), &req, good, NULL, 0));

    memcpy(bad, good, sizeof(bad));
    bad[1] = 9;
    check_rejects(hosts, LEN(hosts), &req, bad,
                  "node 1 of shard 0 is on host index 9; there are 8 hosts");
    bad[1] = 6;
    check_rejects(hosts, LEN(hosts), &req, bad, "node 1 of shard 0 is on host down");
    bad[1] = 0;
    check_rejects(hosts, LEN(hosts), &req, bad,
                  "no two nodes of a shard on one host: nodes 0 and 1 of shard 0 are on host a1");
    bad[1] = 1;
    check_rejects(hosts, LEN(hosts), &req, bad,
                  "multi_az: replica 1 of shard 0 is in its primary's AZ az-a");
    req.multi_az = false;
    assert_true(sched_check(hosts, LEN(hosts), &req, bad, NULL, 0));
    req.multi_az = true;

    memcpy(bad, good, sizeof(bad));
    bad[2] = 1; /* shard 1: primary a2, replica a2 -> b1 */
    bad[3] = 2;
    check_rejects(hosts, LEN(hosts), &req, bad,
                  "primaries spread: az-a holds 2 of 3 primaries; with hosts with room in 3 AZs, "
                  "no AZ may hold more than 1");

    hosts[0].free_vcpus = 2; /* a1: room for one, holds two */
    check_rejects(hosts, LEN(hosts), &req, good,
                  "not enough capacity: host a1 takes 2 nodes of 2 vCPU / 4096 MiB with 2 vCPU "
                  "/ 32768 MiB free");
}

/* only_host: every node on the host asked, whatever room the others have;
 * none when that host cannot take them. */
static void test_place_only_on_the_host_asked(void **state)
{
    const struct sched_host hosts[] = {
        {"big", "az-a", 64, 262144, true},
        {"small", "az-b", 2, 2048, true},
        {"down", "az-c", 64, 262144, false},
    };
    struct sched_request req = {
        .shards = 1, .replicas = 0, .vcpus = 2, .memory_mib = 1024, .only_host = "small"};
    int host_of[1], elsewhere[1] = {0};

    (void)state;
    place(hosts, LEN(hosts), &req, host_of);
    assert_int_equal(host_of[0], 1);
    check_rejects(hosts, LEN(hosts), &req, elsewhere,
                  "node 0 of shard 0 is on host big, not on host small as asked");
    req.memory_mib = 4096;
    refuse(hosts, LEN(hosts), &req,
           "not enough capacity: 1 nodes of 2 vCPU / 4096 MiB requested, eligible hosts can "
           "take 0");
    req.memory_mib = 1024;
    req.only_host = "down";
    refuse(hosts, LEN(hosts), &req,
           "not enough capacity: 1 nodes of 2 vCPU / 1024 MiB requested, eligible hosts can "
           "take 0");
}

static void test_check_spreads_replicas_over_other_azs(void **state)
{
    const struct sched_request req = {
        .shards = 1, .replicas = 2, .vcpus = 2, .memory_mib = 4096, .multi_az = true};
    const int crowded[] = {0, 2, 3}; /* a1 | b1 b2 though az-c has room */
    const int spread[] = {0, 2, 4};

    (void)state;
    check_rejects(three_azs, LEN(three_azs), &req, crowded,
                  "multi_az: shard 0 has 2 replicas in az-b; at most 1 of its 2 replicas may "
                  "share an AZ when 3 AZs have room");
    assert_true(sched_check(three_azs, LEN(three_azs), &req, spread, NULL, 0));
    /* Without az-c, two replicas in az-b is the best spread there is. */
    assert_true(sched_check(three_azs, 4, &req, crowded, NULL, 0));
    check_rejects(three_azs, 2, &req, spread, "host index 2; there are 2 hosts");
}

/* A replacement keeps the shard spread: not on the shard's hosts, not in the
 * primary's AZ with multi_az, the AZ with fewest of the shard's nodes first,
 * then the most room. */
static void test_pick_replacement(void **state)
{
    (void)state;
    struct sched_host hosts[] = {
        {"a1", "az-a", 8, 8192, true},  {"b1", "az-b", 8, 8192, true},
        {"b2", "az-b", 2, 2048, true},  {"c1", "az-c", 8, 4096, true},
        {"c2", "az-c", 8, 8192, false},
    };
    const char *shard_hosts[] = {"b1"}, *shard_azs[] = {"az-b"};
    struct sched_replacement r = {.vcpus = 2,
                                  .memory_mib = 1024,
                                  .shard_hosts = shard_hosts,
                                  .shard_azs = shard_azs,
                                  .n_shard = 1,
                                  .primary_az = "az-b",
                                  .multi_az = true};
    char err[256] = "";

    /* a1 and c1 are both in AZs without a node of the shard; a1 has more
     * memory for the same room. */
    assert_int_equal(sched_pick_replacement(hosts, 5, &r, err, sizeof(err)), 0);
    hosts[0].eligible = false; /* az-a lost */
    assert_int_equal(sched_pick_replacement(hosts, 5, &r, err, sizeof(err)), 3);
    hosts[3].free_vcpus = 1; /* c1 full: only b2 has room, in the primary's AZ */
    assert_int_equal(sched_pick_replacement(hosts, 5, &r, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "primary's AZ (az-b)"));
    r.multi_az = false; /* without multi_az the primary's AZ will do */
    assert_int_equal(sched_pick_replacement(hosts, 5, &r, err, sizeof(err)), 2);
    hosts[2].free_memory_mib = 512; /* only the shard's own host has room */
    assert_int_equal(sched_pick_replacement(hosts, 5, &r, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "already holds a node of the shard"));
    hosts[1].free_vcpus = 0;
    assert_int_equal(sched_pick_replacement(hosts, 5, &r, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "not enough capacity"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pick_replacement),
        cmocka_unit_test(test_pick_port_lowest_free),
        cmocka_unit_test(test_pick_port_ignores_ports_outside_the_range),
        cmocka_unit_test(test_pick_port_empty_range),
        cmocka_unit_test(test_place_one_node),
        cmocka_unit_test(test_place_fills_hosts_evenly),
        cmocka_unit_test(test_place_three_shards_over_three_azs),
        cmocka_unit_test(test_added_shards_avoid_the_running_primaries),
        cmocka_unit_test(test_place_without_multi_az_still_spreads_replicas),
        cmocka_unit_test(test_place_refuses_without_capacity),
        cmocka_unit_test(test_place_skips_ineligible_hosts),
        cmocka_unit_test(test_place_only_on_the_host_asked),
        cmocka_unit_test(test_place_multi_az_needs_two_azs),
        cmocka_unit_test(test_place_two_azs_one_primary_two_replicas),
        cmocka_unit_test(test_place_multi_az_names_the_full_az),
        cmocka_unit_test(test_place_one_big_host_takes_one_node_per_shard),
        cmocka_unit_test(test_place_moves_a_replica_to_free_a_host),
        cmocka_unit_test(test_place_caps_primaries_per_az),
        cmocka_unit_test(test_place_thousand_shards),
        cmocka_unit_test(test_place_fills_a_fleet_to_the_last_node),
        cmocka_unit_test(test_place_is_deterministic),
        cmocka_unit_test(test_place_finds_what_exhaustive_search_finds),
        cmocka_unit_test(test_place_finds_a_planted_placement),
        cmocka_unit_test(test_check_finds_each_broken_rule),
        cmocka_unit_test(test_check_spreads_replicas_over_other_azs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
