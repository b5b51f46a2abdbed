/* monitor.c -- the host monitor thread. */
#include "monitor.h"

#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ha.h"
#include "http.h"
#include "leader.h"
#include "log.h"
#include "store.h"
#include "snapshots.h"
#include "timeutil.h"
#include "upgrades.h"
#include "xalloc.h"

/* How often hosts are checked and failovers considered: a crashed primary
 * is acted on within this long of its agent's report. */
#define MONITOR_PERIOD_MS 100

struct monitor {
    struct app *app;
    struct db_pool *pool;
    struct ha *ha;
    struct leader *leader; /* whether this cairnd decides (leader.h) */
    int timeout_s;
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;
    bool poked; /* checks wanted before the next tick */
    /* The heartbeat clock (monitor.h), under lock: deaf until started,
     * while the database is out of reach (db_down) and while heartbeats are
     * recorded late (late_us: when one last was); hearing since
     * watching_since_us (time_mono_us) otherwise. */
    bool deaf, db_down;
    int64_t late_us;
    int64_t watching_since_us;
    int retention_days;
    time_t housekeeping_at;
    time_t rollup_at;
    time_t schedule_at;
};

/* Seconds this cairnd has been able to hear heartbeats (0 while deaf).
 * Called with the lock held. */
static double watched_s(const struct monitor *m)
{
    return m->deaf ? 0.0 : (double)(time_mono_us() - m->watching_since_us) / 1e6;
}

/* A heartbeat recorded this long after its sync arrived means cairnd is
 * behind its agents (its workers or its database saturated): the hosts'
 * silence is its own. Hearing resumes once none has been late for a
 * while. */
#define LATE_HEARTBEAT_US (1000 * 1000)
#define CAUGHT_UP_US      (2 * 1000 * 1000)

/* Deaf or hearing as the database and the heartbeats' lateness say; the
 * first moment it hears again starts the clock anew. Lock held. */
static void update_hearing(struct monitor *m)
{
    int64_t now = time_mono_us();
    bool behind = m->late_us != 0 && now - m->late_us < CAUGHT_UP_US;

    if (m->db_down || behind) {
        m->deaf = true;
    } else if (m->deaf) {
        m->deaf = false;
        m->watching_since_us = now;
        if (m->late_us != 0)
            log_info("cairnd caught up with its agents' syncs: hosts are judged again after a "
                     "whole heartbeat timeout",
                     "timeout_s=%d", m->timeout_s);
        m->late_us = 0;
    }
}

/* What a check found of the database: out of reach, the monitor is deaf;
 * the first check that reaches it again starts the clock anew. */
static void note_database(struct monitor *m, enum db_status st)
{
    pthread_mutex_lock(&m->lock);
    m->db_down = st == DB_UNAVAILABLE;
    update_hearing(m);
    pthread_mutex_unlock(&m->lock);
}

void monitor_heard_late(struct monitor *m, int64_t lag_us)
{
    if (m == NULL || lag_us < LATE_HEARTBEAT_US)
        return;
    pthread_mutex_lock(&m->lock);
    if (m->late_us == 0)
        log_warn("cairnd is behind its agents' syncs: no host is judged lost until it has caught "
                 "up and heard them for a whole heartbeat timeout",
                 "lag_ms=%lld", (long long)(lag_us / 1000));
    m->late_us = time_mono_us();
    update_hearing(m);
    pthread_mutex_unlock(&m->lock);
}

struct check {
    struct monitor *m;
    double watched_s;
};

static enum db_status check_fn(struct db_conn *conn, void *arg)
{
    const struct check *c = arg;
    int marked = 0;
    enum db_status st = store_hosts_mark_lost(conn, c->m->timeout_s, c->watched_s, &marked);
    if (st == DB_OK && marked > 0)
        log_warn("hosts lost", "count=%d timeout_s=%d", marked, c->m->timeout_s);
    int changed = 0;
    if (st == DB_OK)
        st = store_shards_purge_removed(conn);
    if (st == DB_OK)
        st = store_clusters_track_health(conn, &changed);
    if (st == DB_OK && changed > 0)
        log_info("cluster statuses changed", "count=%d", changed);
    return st;
}

/* Metrics: the next days' partitions exist before samples arrive, and
 * partitions past the retention go whole. Hourly is plenty; also at start. */
#define HOUSEKEEPING_EVERY_S 3600

static enum db_status housekeeping_fn(struct db_conn *conn, void *arg)
{
    struct monitor *m = arg;
    char first[24], last[24];
    long long now = (long long)time(NULL), dropped = 0;
    enum db_status st;

    snprintf(first, sizeof(first), "%lld", now);
    snprintf(last, sizeof(last), "%lld", now + 2 * 86400);
    long long series = 0;
    /* Retention first, so a day past it is dropped, not compacted. */
    if ((st = store_metric_retention(conn, m->retention_days, &dropped)) != DB_OK ||
        (st = store_metric_compact(conn, &series)) != DB_OK ||
        (st = store_metric_partitions(conn, first, last)) != DB_OK)
        return st;
    if (series > 0)
        log_info("metric days compacted", "series=%lld", series);
    if (dropped > 0)
        log_info("metric partitions dropped", "count=%lld retention_days=%d", dropped,
                 m->retention_days);
    return DB_OK;
}

/* Scheduled engine upgrades and automatic snapshots start within a second
 * of their windows. */
#define SCHEDULE_EVERY_S 1

/* Rollups follow the samples a minute or so behind. */
#define ROLLUP_EVERY_S 60

static enum db_status rollup_fn(struct db_conn *conn, void *arg)
{
    long long rows = 0;
    enum db_status st = store_metric_rollups(conn, &rows);
    (void)arg;
    if (st == DB_OK && rows > 0)
        log_info("metrics rolled up", "rows=%lld", rows);
    return st;
}

/* The metrics' partitions and retention: hourly by the leader, and once
 * by every cairnd when it starts (it may keep another retention; the work
 * is the same whoever does it, and compaction takes a lock of its own). */
static void keep_house(struct monitor *m)
{
    if (time(NULL) >= m->housekeeping_at && db_run(m->pool, housekeeping_fn, m) == DB_OK)
        m->housekeeping_at = time(NULL) + HOUSEKEEPING_EVERY_S;
}

/* The leader's work for one tick: hosts, failovers, upkeep. First, how far
 * behind its agents cairnd is: a sync stuck in its own queue, on a lock or
 * on a saturated database is a heartbeat it has not heard yet. */
static void lead(struct monitor *m)
{
    monitor_heard_late(m, http_agents_behind_us(m->app->http));
    pthread_mutex_lock(&m->lock);
    struct check c = {m, watched_s(m)};
    pthread_mutex_unlock(&m->lock);
    enum db_status st = db_tx(m->pool, DB_READ_COMMITTED, check_fn, &c);
    if (st == DB_FENCED) {
        leader_resign(m->leader);
        return;
    }
    note_database(m, st);
    /* Without the database there is nothing to decide (and nothing to say
     * ten times a second). */
    if (st != DB_OK)
        return;
    ha_tick(m->ha, c.watched_s >= m->timeout_s);
    keep_house(m);
    if (time(NULL) >= m->rollup_at && db_run(m->pool, rollup_fn, m) == DB_OK)
        m->rollup_at = time(NULL) + ROLLUP_EVERY_S;
    if (time(NULL) >= m->schedule_at) {
        upgrade_schedule_tick(m->app);
        snapshot_schedule_tick(m->app);
        m->schedule_at = time(NULL) + SCHEDULE_EVERY_S;
    }
}

static void *monitor_main(void *arg)
{
    struct monitor *m = arg;

    pthread_mutex_lock(&m->lock);
    while (!m->stop) {
        pthread_mutex_unlock(&m->lock);
        bool reachable = false;
        if (leader_tick(m->leader, &reachable) != 0) {
            lead(m);
        } else {
            note_database(m, reachable ? DB_OK : DB_UNAVAILABLE);
            if (reachable && m->housekeeping_at == 0)
                keep_house(m);
        }
        pthread_mutex_lock(&m->lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += MONITOR_PERIOD_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!m->stop && !m->poked &&
               pthread_cond_timedwait(&m->wake, &m->lock, &until) != ETIMEDOUT)
            ;
        m->poked = false;
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

struct monitor *monitor_new(struct app *app, int timeout_s)
{
    struct monitor *m = xcalloc(1, sizeof(*m));
    m->app = app;
    m->pool = app->db;
    m->retention_days = app->cfg.metrics_retention_days;
    m->ha = ha_new(app);
    char host[64] = "localhost", holder[160];
    gethostname(host, sizeof(host) - 1);
    snprintf(holder, sizeof(holder), "%s:%d pid %d", host, app->cfg.listen_port, (int)getpid());
    m->leader = leader_new(app->cfg.database_url, holder);
    m->timeout_s = timeout_s;
    m->deaf = true;
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->wake, NULL);
    return m;
}

void monitor_start(struct monitor *m)
{
    pthread_mutex_lock(&m->lock);
    m->deaf = false;
    m->watching_since_us = time_mono_us();
    pthread_mutex_unlock(&m->lock);
    m->started = true;
    pthread_create(&m->thread, NULL, monitor_main, m);
}

void monitor_poke(struct monitor *m)
{
    pthread_mutex_lock(&m->lock);
    m->poked = true;
    pthread_cond_signal(&m->wake);
    pthread_mutex_unlock(&m->lock);
}

bool monitor_hearing(struct monitor *m)
{
    if (m == NULL)
        return false;
    pthread_mutex_lock(&m->lock);
    bool hearing = !m->deaf;
    pthread_mutex_unlock(&m->lock);
    return hearing;
}

bool monitor_trusts_losses(struct monitor *m)
{
    if (m == NULL)
        return false;
    pthread_mutex_lock(&m->lock);
    bool trusted = watched_s(m) >= m->timeout_s;
    pthread_mutex_unlock(&m->lock);
    return trusted;
}

long long monitor_leader_term(struct monitor *m)
{
    return m != NULL ? leader_current(m->leader) : 0;
}

void monitor_stop(struct monitor *m)
{
    if (!m->started)
        return;
    pthread_mutex_lock(&m->lock);
    m->stop = true;
    pthread_cond_signal(&m->wake);
    pthread_mutex_unlock(&m->lock);
    pthread_join(m->thread, NULL);
    m->started = false;
}

void monitor_free(struct monitor *m)
{
    monitor_stop(m);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->wake);
    ha_free(m->ha);
    leader_free(m->leader);
    free(m);
}
