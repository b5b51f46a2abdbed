/* agent_swarm.c -- many simulated hosts against one cairnd, for the fleet
 * benchmark (tests/bench/fleet) and its system test.
 *
 * Each simulated host speaks the agent protocol (docs/agent-protocol.md) as
 * cairn-agent does, without engines: it registers with the bootstrap
 * token, long-polls POST /v1/agent/sync with a report of the nodes its
 * last desired set gave it (each running, in the role the set implies, as
 * a real agent would report them), and pushes a sample of each node's
 * metrics every period on a connection of its own. All of them run on one
 * thread over libcurl's multi socket interface and epoll: two connections
 * per host, and only those with something to read or write cost a thing
 * (a poll over all of them took a third of a core at 2,000 hosts, on the
 * machine shared with the cairnd it measures).
 *
 *   agent_swarm --control-plane URL --bootstrap-token T --hosts N
 *               [--prefix NAME] [--azs N] [--ports MIN-MAX] [--duration S]
 *               [--metrics-period S] [--register-per-s N]
 *
 * stdout, one line per event (times are wall-clock microseconds):
 *   registered host=NAME id=UUID us=T
 *   desired host=NAME generation=G us=T nodes=ID,ID,...  (a new desired set)
 *   summary ...                                          (at the end)
 * stderr: a line of counts every 5 s. It runs for --duration seconds
 * (default: until SIGINT or SIGTERM) and exits 0 when every host
 * registered and no sync failed. */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "strbuf.h"
#include "timeutil.h"
#include "xalloc.h"

enum kind { REGISTER, SYNC, METRICS };

struct host;

struct call {
    struct host *host;
    enum kind kind;
    CURL *easy;
    struct curl_slist *headers;
    char *body;
    struct strbuf answer;
    bool busy;
};

struct host {
    char name[48];
    const char *az;
    char *credential;
    long long generation;
    json_t *desired;     /* the nodes of the last desired set */
    char *report;        /* the sync's body for it; NULL: to be made */
    int64_t next_sync;   /* time_mono_us() the next sync may start (after a failure) */
    int64_t next_push;   /* ... the next metrics push */
    struct call sync;    /* register, then sync */
    struct call metrics; /* the pushes */
};

static struct {
    const char *url, *token, *prefix;
    int hosts, azs, port_min, port_max, duration_s, period_s, register_per_s;
} opt = {.prefix = "swarm",
         .azs = 3,
         .port_min = 40000,
         .port_max = 40099,
         .period_s = 10,
         .register_per_s = 400};

static struct {
    long registered, register_errors, syncs, sync_errors, desired_sets, pushes, push_errors,
        samples;
} count;

static volatile sig_atomic_t stopping;

/* The multi handle's sockets, watched by epoll, and when it wants to be
 * called on a timeout (time_mono_us; INT64_MAX: not). */
static int epfd = -1;
static int64_t curl_due_us = INT64_MAX;

static int on_socket(CURL *easy, curl_socket_t s, int what, void *multi, void *watched)
{
    struct epoll_event ev = {0};
    (void)easy;
    ev.data.fd = s;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(epfd, EPOLL_CTL_DEL, s, NULL);
        return 0;
    }
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
    if (epoll_ctl(epfd, watched != NULL ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s, &ev) != 0)
        fprintf(stderr, "agent_swarm: epoll_ctl: %s\n", strerror(errno));
    else if (watched == NULL)
        curl_multi_assign(multi, s, &epfd); /* any non-NULL pointer: watched */
    return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *arg)
{
    (void)multi;
    (void)arg;
    curl_due_us = timeout_ms < 0 ? INT64_MAX : time_mono_us() + (int64_t)timeout_ms * 1000;
    return 0;
}

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
    struct call *c = arg;
    strbuf_printf(&c->answer, "%.*s", (int)(size * n), data);
    return size * n;
}

static void start(CURLM *multi, struct call *c, const char *path, const char *token, char *body)
{
    char *url = xasprintf("%s%s", opt.url, path),
         *auth = xasprintf("Authorization: Bearer %s", token);

    if (c->easy == NULL) {
        c->easy = curl_easy_init();
        curl_easy_setopt(c->easy, CURLOPT_PRIVATE, c);
        curl_easy_setopt(c->easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, c);
        curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, 15000L);
        curl_easy_setopt(c->easy, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
        strbuf_init(&c->answer, 1024);
    }
    curl_slist_free_all(c->headers);
    c->headers = curl_slist_append(NULL, "Content-Type: application/json");
    c->headers = curl_slist_append(c->headers, "Expect:");
    c->headers = curl_slist_append(c->headers, auth);
    free(c->body);
    c->body = body;
    c->answer.len = 0;
    c->answer.p[0] = '\0';
    curl_easy_setopt(c->easy, CURLOPT_URL, url);
    curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, c->body);
    curl_multi_add_handle(multi, c->easy);
    c->busy = true;
    free(url);
    free(auth);
}

static json_t *engines(void)
{
    return json_pack("[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}]", "engine", "valkey", "version",
                     "8.0.1", "line", "8.0", "path", "/usr/bin/valkey-server", "engine", "redis",
                     "version", "7.0.15", "line", "7.0", "path", "/usr/bin/redis-server");
}

static void start_register(CURLM *multi, struct host *h)
{
    json_t *body = json_pack("{s:s, s:s, s:s, s:i, s:i, s:{s:i, s:i}, s:o, s:s}", "name", h->name,
                             "az", h->az, "address", "127.0.0.1", "vcpus", 8, "memory_mib", 32768,
                             "ports", "min", opt.port_min, "max", opt.port_max, "engines",
                             engines(), "agent_version", "swarm");
    h->sync.kind = REGISTER;
    start(multi, &h->sync, "/v1/agent/register", opt.token, json_dumps(body, JSON_COMPACT));
    json_decref(body);
}

/* The report a real agent would make of the desired set's nodes, each
 * running: a replica (replicaof given) linked to its primary. */
static json_t *report(const struct host *h)
{
    json_t *nodes = json_array();
    size_t i;
    json_t *d;

    json_array_foreach (h->desired, i, d) {
        if (!json_is_true(json_object_get(d, "run")))
            continue;
        json_t *config = json_object_get(d, "config");
        bool replica = json_is_object(json_object_get(config, "replicaof"));
        const char *engine = json_string_value(json_object_get(d, "engine"));
        json_array_append_new(
            nodes, json_pack("{s:O, s:i, s:s, s:O, s:s, s:O, s:s, s:I, s:s?, s:b, s:b, s:i, s:i}",
                             "node_id", json_object_get(d, "node_id"), "pid", 10000 + (int)i,
                             "status", "running", "port", json_object_get(d, "port"), "role",
                             replica ? "replica" : "primary", "engine",
                             json_object_get(d, "engine"), "version",
                             engine != NULL && strcmp(engine, "redis") == 0 ? "7.0.15" : "8.0.1",
                             "replication_offset", (json_int_t)1000, "master_link_status",
                             replica ? "up" : NULL, "sync_in_progress", 0, "loading", 0, "restarts",
                             0, "observed_ms_ago", 200));
    }
    return nodes;
}

/* The report changes only with the desired set: its text is made once
 * per set (the tool's own CPU is taken from cairnd's on one machine). */
static void start_sync(CURLM *multi, struct host *h)
{
    if (h->report == NULL) {
        json_t *body = json_pack("{s:I, s:i, s:o, s:o}", "generation", (json_int_t)h->generation,
                                 "wait_ms", 10000, "engines", engines(), "nodes", report(h));
        h->report = json_dumps(body, JSON_COMPACT);
        json_decref(body);
    }
    h->sync.kind = SYNC;
    start(multi, &h->sync, "/v1/agent/sync", h->credential, xstrdup(h->report));
}

/* One sample per running node, for the period that just closed. */
static void start_push(CURLM *multi, struct host *h)
{
    long long at = (time_wall_us() / 1000000 / opt.period_s - 1) * opt.period_s;
    json_t *samples = json_array();
    size_t i;
    json_t *d;

    json_array_foreach (h->desired, i, d) {
        if (!json_is_true(json_object_get(d, "run")))
            continue;
        json_array_append_new(
            samples, json_pack("{s:O, s:I, s:{s:f, s:f, s:f, s:i, s:i, s:i, s:f, s:i, s:f, s:i}}",
                               "node_id", json_object_get(d, "node_id"), "at", (json_int_t)at,
                               "values", "CPUUtilization", 12.5, "EngineCPUUtilization", 0.4,
                               "CacheHitRate", 98.3, "CurrConnections", 4, "CacheHits", 1180,
                               "CacheMisses", 20, "GetTypeCmdsLatency", 1.8, "GetTypeCmds", 1200,
                               "FreeableMemory", 6126514176.0, "IsPrimary", 1));
    }
    count.samples += (long)json_array_size(samples);
    json_t *body =
        json_pack("{s:i, s:i, s:o}", "period_s", opt.period_s, "dropped", 0, "samples", samples);
    h->metrics.kind = METRICS;
    start(multi, &h->metrics, "/v1/agent/metrics", h->credential, json_dumps(body, JSON_COMPACT));
    json_decref(body);
}

static void print_desired(const struct host *h)
{
    size_t i;
    json_t *d;

    printf("desired host=%s generation=%lld us=%lld nodes=", h->name, h->generation,
           (long long)time_wall_us());
    json_array_foreach (h->desired, i, d)
        printf("%s%s", i > 0 ? "," : "", json_string_value(json_object_get(d, "node_id")));
    printf("\n");
    fflush(stdout);
}

/* A finished request: what it answered, and what the host does next. */
static void finished(struct call *c, CURLcode code)
{
    struct host *h = c->host;
    long status = 0;
    int64_t now = time_mono_us();

    curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
    c->busy = false;
    json_t *answer = code == CURLE_OK ? json_loadb(c->answer.p, c->answer.len, 0, NULL) : NULL;
    switch (c->kind) {
    case REGISTER: {
        const char *cred = json_string_value(json_object_get(answer, "credential"));
        if (status != 200 || cred == NULL) {
            count.register_errors++;
            fprintf(stderr, "agent_swarm: %s: register answered %ld: %.200s\n", h->name, status,
                    c->answer.len > 0 ? c->answer.p : curl_easy_strerror(code));
            h->next_sync = now + 1000000; /* registers again */
            break;
        }
        h->credential = xstrdup(cred);
        count.registered++;
        printf("registered host=%s id=%s us=%lld\n", h->name,
               json_string_value(json_object_get(answer, "host_id")), (long long)time_wall_us());
        fflush(stdout);
        h->next_push = now + (int64_t)(rand() % (opt.period_s * 1000)) * 1000;
        break;
    }
    case SYNC: {
        json_t *nodes = json_object_get(answer, "nodes");
        if (status != 200 || !json_is_array(nodes)) {
            count.sync_errors++;
            fprintf(stderr, "agent_swarm: %s: sync answered %ld: %.200s\n", h->name, status,
                    c->answer.len > 0 ? c->answer.p : curl_easy_strerror(code));
            h->next_sync = now + 500000;
            break;
        }
        count.syncs++;
        long long generation = json_integer_value(json_object_get(answer, "generation"));
        if (generation != h->generation) {
            json_decref(h->desired);
            h->desired = json_incref(nodes);
            h->generation = generation;
            free(h->report);
            h->report = NULL;
            count.desired_sets++;
            print_desired(h);
        }
        break;
    }
    case METRICS:
        if (status == 204)
            count.pushes++;
        else
            count.push_errors++;
        break;
    }
    json_decref(answer);
}

static void usage(void)
{
    fprintf(stderr, "usage: agent_swarm --control-plane URL --bootstrap-token T --hosts N "
                    "[--prefix NAME] [--azs N] [--ports MIN-MAX] [--duration S] "
                    "[--metrics-period S] [--register-per-s N]\n");
    exit(2);
}

static void parse(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            usage();
        i++;
        if (strcmp(a, "--control-plane") == 0)
            opt.url = v;
        else if (strcmp(a, "--bootstrap-token") == 0)
            opt.token = v;
        else if (strcmp(a, "--prefix") == 0)
            opt.prefix = v;
        else if (strcmp(a, "--hosts") == 0)
            opt.hosts = atoi(v);
        else if (strcmp(a, "--azs") == 0)
            opt.azs = atoi(v);
        else if (strcmp(a, "--duration") == 0)
            opt.duration_s = atoi(v);
        else if (strcmp(a, "--metrics-period") == 0)
            opt.period_s = atoi(v);
        else if (strcmp(a, "--register-per-s") == 0)
            opt.register_per_s = atoi(v);
        else if (strcmp(a, "--ports") != 0 || sscanf(v, "%d-%d", &opt.port_min, &opt.port_max) != 2)
            usage();
    }
    if (opt.url == NULL || opt.token == NULL || opt.hosts < 1 || opt.azs < 1 || opt.period_s < 1 ||
        opt.register_per_s < 1)
        usage();
}

int main(int argc, char **argv)
{
    static const char *const az_names[] = {"az-a", "az-b", "az-c", "az-d", "az-e", "az-f"};

    parse(argc, argv);
    /* Two connections a host, and some room. */
    struct rlimit fds = {(rlim_t)opt.hosts * 2 + 64, (rlim_t)opt.hosts * 2 + 64};
    if (setrlimit(RLIMIT_NOFILE, &fds) != 0)
        fprintf(stderr, "agent_swarm: cannot allow %d descriptors: %s\n", opt.hosts * 2 + 64,
                strerror(errno));
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) {
        fprintf(stderr, "agent_swarm: epoll_create1: %s\n", strerror(errno));
        return 2;
    }
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, multi);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, on_timer);
    struct host *hosts = xcalloc((size_t)opt.hosts, sizeof(*hosts));
    for (int i = 0; i < opt.hosts; i++) {
        struct host *h = &hosts[i];
        snprintf(h->name, sizeof(h->name), "%s-%05d", opt.prefix, i);
        h->az = az_names[i % (opt.azs < 6 ? opt.azs : 6)];
        h->desired = json_array();
        h->sync.host = h->metrics.host = h;
    }

    int64_t began = time_mono_us(), said = began, end = began + (int64_t)opt.duration_s * 1000000,
            scanned = 0;
    int next_register = 0;
    while (!stopping && (opt.duration_s == 0 || time_mono_us() < end)) {
        int64_t now = time_mono_us();
        /* The hosts due a request: looked over every 2 ms at most. */
        bool scan = now - scanned >= 2000;
        if (scan)
            scanned = now;
        /* Registrations at the ramp's pace; the rest as each host is due. */
        int due = (int)((now - began) * opt.register_per_s / 1000000) + 1;
        for (; scan && next_register < opt.hosts && next_register < due; next_register++)
            start_register(multi, &hosts[next_register]);
        for (int i = 0; scan && i < next_register; i++) {
            struct host *h = &hosts[i];
            if (!h->sync.busy && now >= h->next_sync) {
                if (h->credential == NULL)
                    start_register(multi, h);
                else
                    start_sync(multi, h);
            }
            if (h->credential != NULL && !h->metrics.busy && now >= h->next_push) {
                if (json_array_size(h->desired) > 0) /* nothing to say without nodes */
                    start_push(multi, h);
                h->next_push = now + (int64_t)opt.period_s * 1000000;
            }
        }
        int running = 0, left = 0;
        struct epoll_event events[256];
        int64_t wait_us = curl_due_us - time_mono_us();
        int n = epoll_wait(epfd, events, 256,
                           wait_us <= 0     ? 0
                           : wait_us < 2000 ? (int)(wait_us + 999) / 1000
                                            : 2);
        for (int i = 0; i < n; i++) {
            int flags = (events[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                        (events[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                        (events[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
            curl_multi_socket_action(multi, events[i].data.fd, flags, &running);
        }
        if (time_mono_us() >= curl_due_us) {
            curl_due_us = INT64_MAX;
            curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
            struct call *c = NULL;
            if (msg->msg != CURLMSG_DONE)
                continue;
            CURL *easy = msg->easy_handle;
            CURLcode code = msg->data.result;
            curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&c);
            curl_multi_remove_handle(multi, easy);
            finished(c, code);
        }
        if (now - said >= 5000000) {
            said = now;
            fprintf(stderr,
                    "agent_swarm: %.0f s: registered %ld/%d, syncs %ld (%ld failed), desired sets "
                    "%ld, metric pushes %ld (%ld failed)\n",
                    (double)(now - began) / 1e6, count.registered, opt.hosts, count.syncs,
                    count.sync_errors, count.desired_sets, count.pushes, count.push_errors);
        }
    }
    printf("summary hosts=%d registered=%ld register_errors=%ld syncs=%ld sync_errors=%ld "
           "desired_sets=%ld pushes=%ld push_errors=%ld samples=%ld seconds=%.1f\n",
           opt.hosts, count.registered, count.register_errors, count.syncs, count.sync_errors,
           count.desired_sets, count.pushes, count.push_errors, count.samples,
           (double)(time_mono_us() - began) / 1e6);
    fflush(stdout);
    for (int i = 0; i < opt.hosts; i++) {
        struct call *calls[2] = {&hosts[i].sync, &hosts[i].metrics};
        for (int k = 0; k < 2; k++) {
            if (calls[k]->easy == NULL)
                continue;
            if (calls[k]->busy)
                curl_multi_remove_handle(multi, calls[k]->easy);
            curl_easy_cleanup(calls[k]->easy);
            curl_slist_free_all(calls[k]->headers);
            free(calls[k]->body);
            free(calls[k]->answer.p);
        }
        free(hosts[i].credential);
        free(hosts[i].report);
        json_decref(hosts[i].desired);
    }
    free(hosts);
    curl_multi_cleanup(multi);
    close(epfd);
    curl_global_cleanup();
    return count.registered == opt.hosts && count.sync_errors == 0 ? 0 : 1;
}
