/* store_metric_series.c -- compacted metric days (metric_series, migration
 * 0007): a finished UTC day of 60-second samples becomes one series per
 * node and metric (series_codec.h) and its partition goes; a sample that
 * arrives later for a compacted day brings its node's day back into
 * samples, so rollups are redone over the whole of it and the next
 * compaction takes it again; queries read the series of the days they
 * span. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"
#include "series_codec.h"
#include "store.h"
#include "xalloc.h"

#define DAY_SLOTS  1440 /* 60-second samples */
#define FETCH_ROWS 20000
#define WRITE_ROWS 2000 /* series a statement */

/* One node's day: every metric's minutes, metric-major. */
struct node_day {
    char cluster_id[128], node_id[40];
    size_t ncat;
    float *values;
    bool *present;
    bool any;
};

static void node_day_init(struct node_day *d, size_t ncat)
{
    memset(d, 0, sizeof(*d));
    d->ncat = ncat;
    d->values = xcalloc(ncat * DAY_SLOTS, sizeof(float));
    d->present = xcalloc(ncat * DAY_SLOTS, sizeof(bool));
}

static void node_day_reset(struct node_day *d, const char *cluster_id, const char *node_id)
{
    snprintf(d->cluster_id, sizeof(d->cluster_id), "%s", cluster_id);
    snprintf(d->node_id, sizeof(d->node_id), "%s", node_id);
    memset(d->present, 0, d->ncat * DAY_SLOTS * sizeof(bool));
    d->any = false;
}

static void node_day_free(struct node_day *d)
{
    free(d->values);
    free(d->present);
}

/* A real[] in PostgreSQL's text form, "{1.5,NULL,...}", into minute slot
 * of d. PostgreSQL prints a real as the shortest text that reads back as
 * the same float, so strtof gives its bits back. */
static void put_sample(struct node_day *d, int slot, const char *text)
{
    const char *p = text[0] == '{' ? text + 1 : text;
    for (size_t i = 0; *p != '\0' && *p != '}'; i++) {
        char *end;
        if (strncmp(p, "NULL", 4) == 0) {
            end = (char *)p + 4;
        } else {
            float v = strtof(p, &end);
            if (end == p)
                break;
            if (i < d->ncat) {
                d->values[i * DAY_SLOTS + slot] = v;
                d->present[i * DAY_SLOTS + slot] = true;
                d->any = true;
            }
        }
        p = *end == ',' ? end + 1 : end;
    }
}

static char *hex(const unsigned char *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    char *s = xmalloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = digits[p[i] >> 4];
        s[2 * i + 1] = digits[p[i] & 15];
    }
    s[2 * n] = '\0';
    return s;
}

/* A node's day as series rows: {c, n, m, d} with d the series in hex; a
 * metric the node never had that day has no row. */
static void node_day_rows(const struct node_day *d, json_t *rows)
{
    for (size_t i = 0; i < d->ncat; i++) {
        bool any = false;
        for (size_t k = 0; k < DAY_SLOTS && !any; k++)
            any = d->present[i * DAY_SLOTS + k];
        if (!any)
            continue;
        size_t len;
        unsigned char *enc =
            series_encode(d->values + i * DAY_SLOTS, d->present + i * DAY_SLOTS, DAY_SLOTS, &len);
        char *h = hex(enc, len);
        json_array_append_new(rows, json_pack("{s:s, s:s, s:I, s:s}", "c", d->cluster_id, "n",
                                              d->node_id, "m", (json_int_t)(i + 1), "d", h));
        free(h);
        free(enc);
    }
}

static const struct db_stmt write_series = {
    "INSERT INTO metric_series (cluster_id, node_id, day, metric, data)"
    " SELECT r.c, r.n, $1::date, r.m, decode(r.d, 'hex')"
    " FROM jsonb_to_recordset($2::jsonb) AS r(c text, n uuid, m smallint, d text)"
    " ON CONFLICT (cluster_id, metric, day, node_id) DO UPDATE SET data = EXCLUDED.data"};

static enum db_status flush_rows(struct db_conn *conn, const char *day, json_t *rows,
                                 long long *written)
{
    if (json_array_size(rows) == 0)
        return DB_OK;
    char *text = json_dumps(rows, JSON_COMPACT);
    const char *params[2] = {day, text};
    enum db_status st;
    PGresult *res = db_query(conn, &write_series, 2, params, &st);
    if (res != NULL)
        *written += atoll(PQcmdTuples(res));
    PQclear(res);
    free(text);
    json_array_clear(rows);
    return st;
}

/* Run a command that is not a prepared statement (cursors). */
static PGresult *exec(struct db_conn *conn, const char *sql, enum db_status *st)
{
    PGconn *pg = db_pgconn(conn);
    PGresult *res = PQexec(pg, sql);
    *st = db_classify(pg, res);
    if (*st != DB_OK) {
        log_error("metric compaction failed", "error=\"%s\"", PQerrorMessage(pg));
        PQclear(res);
        return NULL;
    }
    return res;
}

static const struct db_stmt day_lock = {
    "SELECT pg_advisory_xact_lock(hashtext('cairn metric compaction')),"
    " to_regclass('metric_samples_' || to_char($1::date, 'YYYYMMDD')) IS NOT NULL,"
    " metric_series_partition($1::date)"};

static const struct db_stmt day_done = {"INSERT INTO metric_compacted_days (day) VALUES ($1::date)"
                                        " ON CONFLICT (day) DO UPDATE SET compacted_at = now()"};

/* Samples of other periods (shortened for tests) stay; with none, the
 * partition goes whole. */
static const struct db_stmt day_drop = {"SELECT metric_drop_compacted_samples($1::date)"};

/* Inside a transaction: the day's samples, node by node, into series. */
/* Read the day's samples through the open cursor, a node at a time, and
 * write them as series. */
static enum db_status compact_rows(struct db_conn *conn, const char *day, long long *written)
{
    struct node_day d;
    json_t *rows = json_array();
    enum db_status st = DB_OK;
    node_day_init(&d, metric_count);
    while (st == DB_OK) {
        char fetch[48];
        snprintf(fetch, sizeof(fetch), "FETCH %d FROM compact", FETCH_ROWS);
        PGresult *res = exec(conn, fetch, &st);
        if (res == NULL)
            break;
        int n = PQntuples(res);
        for (int r = 0; r < n && st == DB_OK; r++) {
            const char *cluster = PQgetvalue(res, r, 0), *node = PQgetvalue(res, r, 1);
            if (strcmp(node, d.node_id) != 0 || strcmp(cluster, d.cluster_id) != 0) {
                if (d.any)
                    node_day_rows(&d, rows);
                if (json_array_size(rows) >= WRITE_ROWS)
                    st = flush_rows(conn, day, rows, written);
                node_day_reset(&d, cluster, node);
            }
            int slot = atoi(PQgetvalue(res, r, 2));
            if (slot >= 0 && slot < DAY_SLOTS)
                put_sample(&d, slot, PQgetvalue(res, r, 3));
        }
        PQclear(res);
        if (n < FETCH_ROWS)
            break;
    }
    if (st == DB_OK && d.any)
        node_day_rows(&d, rows);
    if (st == DB_OK)
        st = flush_rows(conn, day, rows, written);
    json_decref(rows);
    node_day_free(&d);
    return st;
}

static enum db_status compact_day_tx(struct db_conn *conn, const char *day, long long *written)
{
    const char *params[1] = {day};
    enum db_status st;
    PGresult *res = db_query(conn, &day_lock, 1, params, &st);
    if (res == NULL)
        return st;
    bool exists = strcmp(PQgetvalue(res, 0, 1), "t") == 0;
    PQclear(res);
    if (!exists) /* another cairnd did it */
        return DB_OK;

    char *declare = xasprintf(
        "DECLARE compact NO SCROLL CURSOR FOR"
        " SELECT cluster_id, node_id, (extract(epoch FROM at)::bigint %% 86400) / 60, vals"
        " FROM metric_samples_%.4s%.2s%.2s WHERE period_s = 60 ORDER BY cluster_id, node_id, at",
        day, day + 5, day + 8);
    res = exec(conn, declare, &st);
    free(declare);
    PQclear(res);
    if (st != DB_OK)
        return st;

    st = compact_rows(conn, day, written);
    if (st == DB_OK)
        PQclear(exec(conn, "CLOSE compact", &st));
    if (st == DB_OK)
        PQclear(db_query(conn, &day_done, 1, params, &st));
    if (st == DB_OK)
        PQclear(db_query(conn, &day_drop, 1, params, &st));
    return st;
}

/* UTC days before today (and ten minutes into it, for late samples and the
 * rollups) whose partitions still exist. */
static const struct db_stmt finished_days = {
    "SELECT to_char(to_date(substr(c.relname, 16), 'YYYYMMDD'), 'YYYY-MM-DD')"
    " FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
    " WHERE i.inhparent = 'metric_samples'::regclass AND c.relname ~ '^metric_samples_[0-9]{8}$'"
    "   AND to_date(substr(c.relname, 16), 'YYYYMMDD')"
    "     < ((now() - interval '10 minutes') AT TIME ZONE 'UTC')::date"
    " ORDER BY 1"};

enum db_status store_metric_compact(struct db_conn *conn, long long *series)
{
    enum db_status st;
    PGresult *res = db_query(conn, &finished_days, 0, NULL, &st);

    *series = 0;
    if (res == NULL)
        return st;
    for (int r = 0; r < PQntuples(res) && st == DB_OK; r++) {
        long long written = 0;
        if ((st = db_exec(conn, "BEGIN")) != DB_OK)
            break;
        st = compact_day_tx(conn, PQgetvalue(res, r, 0), &written);
        if (st == DB_OK && (st = db_exec(conn, "COMMIT")) == DB_OK)
            *series += written;
        else
            db_exec(conn, "ROLLBACK");
    }
    PQclear(res);
    return st;
}

/* A day's series from column col of row r (bytea, as PostgreSQL prints it)
 * into values and present; one that does not decode is logged and leaves
 * every slot absent. */
static void decode_cell(const PGresult *res, int r, int col, const char *node_id, float *values,
                        bool *present)
{
    size_t len = 0;
    unsigned char *data = PQunescapeBytea((const unsigned char *)PQgetvalue(res, r, col), &len);
    if (data == NULL || series_decode(data, len, values, present, DAY_SLOTS) < 0) {
        log_error("a compacted metric series does not decode; its values are left out",
                  "node_id=%s bytes=%zu", node_id, len);
        memset(present, 0, DAY_SLOTS * sizeof(bool));
    }
    PQfreemem(data);
}

/* ---- late samples ---------------------------------------------------------- */

/* The compacted series of the host's nodes named in rows, for the days
 * [first, last] touches, taken out of metric_series. */
static const struct db_stmt take_series = {
    "WITH want AS (SELECT DISTINCT n.cluster_id, n.id AS node_id,"
    "     (to_timestamp(s.at) AT TIME ZONE 'UTC')::date AS day"
    "   FROM jsonb_to_recordset($2::jsonb) AS s(node_id uuid, at bigint)"
    "   JOIN nodes n ON n.id = s.node_id AND n.host_id = $1::uuid"
    "   JOIN metric_compacted_days c ON c.day = (to_timestamp(s.at) AT TIME ZONE 'UTC')::date)"
    " , taken AS (DELETE FROM metric_series m USING want w"
    " WHERE m.cluster_id = w.cluster_id AND m.day = w.day AND m.node_id = w.node_id"
    "   AND m.metric = ANY (SELECT generate_series(1, $3::int))"
    " RETURNING m.cluster_id, m.node_id, m.day, m.metric, m.data)"
    " SELECT cluster_id, node_id, extract(epoch FROM day::timestamp AT TIME ZONE 'UTC')::bigint,"
    "   metric, data FROM taken ORDER BY node_id, day"};

static const struct db_stmt any_compacted = {
    "SELECT count(*) FROM metric_compacted_days"
    " WHERE day BETWEEN (to_timestamp($1::bigint) AT TIME ZONE 'UTC')::date"
    "   AND (to_timestamp($2::bigint) AT TIME ZONE 'UTC')::date"};

static const struct db_stmt restore_samples = {
    "WITH s AS (SELECT * FROM jsonb_to_recordset($1::jsonb)"
    "   AS s(c text, n uuid, at bigint, vals real[]))"
    " INSERT INTO metric_samples (cluster_id, node_id, at, period_s, vals)"
    " SELECT s.c, s.n, to_timestamp(s.at), 60, s.vals FROM s"
    " ON CONFLICT (cluster_id, at, node_id) DO NOTHING"};

static json_t *real_or_null(const struct node_day *d, size_t metric, int slot)
{
    size_t k = metric * DAY_SLOTS + (size_t)slot;
    return d->present[k] ? json_real(d->values[k]) : json_null();
}

/* d's minutes as sample rows for restore_samples. */
static void restore_rows(const struct node_day *d, long long day_epoch, json_t *rows)
{
    for (int slot = 0; slot < DAY_SLOTS; slot++) {
        bool any = false;
        for (size_t i = 0; i < d->ncat && !any; i++)
            any = d->present[i * DAY_SLOTS + slot];
        if (!any)
            continue;
        json_t *vals = json_array();
        for (size_t i = 0; i < d->ncat; i++)
            json_array_append_new(vals, real_or_null(d, i, slot));
        json_array_append_new(rows,
                              json_pack("{s:s, s:s, s:I, s:o}", "c", d->cluster_id, "n", d->node_id,
                                        "at", (json_int_t)(day_epoch + 60LL * slot), "vals", vals));
    }
}

enum db_status store_metric_uncompact(struct db_conn *conn, const char *host_id, const char *rows,
                                      const char *first_at, const char *last_at,
                                      long long *restored)
{
    const char *range[2] = {first_at, last_at};
    char ncat[16];
    long long compacted = 0;
    enum db_status st = store_get_int64(conn, &any_compacted, 2, range, &compacted);

    *restored = 0;
    if (st != DB_OK || compacted == 0)
        return st;
    snprintf(ncat, sizeof(ncat), "%zu", metric_count);
    const char *params[3] = {host_id, rows, ncat};
    PGresult *res = db_query(conn, &take_series, 3, params, &st);
    if (res == NULL)
        return st;

    int n = PQntuples(res);
    json_t *samples = json_array();
    struct node_day d;
    long long day = -1;
    node_day_init(&d, metric_count);
    for (int k = 0; k <= n; k++) {
        if (k == n || strcmp(PQgetvalue(res, k, 1), d.node_id) != 0 ||
            atoll(PQgetvalue(res, k, 2)) != day) {
            if (d.any)
                restore_rows(&d, day, samples);
            if (k == n)
                break;
            day = atoll(PQgetvalue(res, k, 2));
            node_day_reset(&d, PQgetvalue(res, k, 0), PQgetvalue(res, k, 1));
        }
        int metric = atoi(PQgetvalue(res, k, 3));
        if (metric >= 1 && (size_t)metric <= d.ncat) {
            size_t base = (size_t)(metric - 1) * DAY_SLOTS;
            decode_cell(res, k, 4, d.node_id, d.values + base, d.present + base);
            for (size_t s = 0; s < DAY_SLOTS; s++)
                d.any |= d.present[base + s];
        }
    }
    node_day_free(&d);
    PQclear(res);
    if (json_array_size(samples) > 0) {
        char *text = json_dumps(samples, JSON_COMPACT);
        const char *rp[1] = {text};
        res = db_query(conn, &restore_samples, 1, rp, &st);
        if (res != NULL)
            *restored = atoll(PQcmdTuples(res));
        PQclear(res);
        free(text);
    }
    json_decref(samples);
    return st;
}

/* ---- queries --------------------------------------------------------------- */

/* The series of metric $2 in the cluster's days that [$3, $4) touches, from
 * where the rollups of $6 seconds (0: none) stop. */
static const struct db_stmt series_in_range = {
    "WITH mark AS (SELECT coalesce((SELECT done_until FROM metric_rollup_marks"
    "     WHERE period_s = $6::int), '-infinity') AS t)"
    " SELECT s.node_id, extract(epoch FROM s.day::timestamp AT TIME ZONE 'UTC')::bigint, s.data"
    " FROM metric_series s, mark"
    " WHERE s.cluster_id = $1 AND s.metric = $2::int"
    "   AND s.day >= (greatest(to_timestamp($3::bigint),"
    "     CASE WHEN $6::int > 0 THEN mark.t ELSE '-infinity' END) AT TIME ZONE 'UTC')::date"
    "   AND s.day <= (to_timestamp($4::bigint) AT TIME ZONE 'UTC')::date"
    "   AND ($5::uuid IS NULL OR s.node_id = $5::uuid)"};

/* PostgreSQL's binary form of a one-dimensional real[] (array_send). */
#define FLOAT4OID 700

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static unsigned char *real_array_begin(size_t n, size_t *len)
{
    unsigned char *p = xmalloc(20 + 8 * n);
    put_be32(p, n > 0 ? 1 : 0); /* dimensions */
    put_be32(p + 4, 1);         /* may hold NULLs */
    put_be32(p + 8, FLOAT4OID);
    put_be32(p + 12, (uint32_t)n);
    put_be32(p + 16, 1); /* lower bound */
    *len = n > 0 ? 20 : 12;
    return p;
}

static void real_array_put(unsigned char *p, size_t *len, bool present, float v)
{
    if (!present) {
        put_be32(p + *len, UINT32_MAX); /* -1: NULL */
        *len += 4;
        return;
    }
    uint32_t bits;
    memcpy(&bits, &v, sizeof(bits));
    put_be32(p + *len, 4);
    put_be32(p + *len + 4, bits);
    *len += 8;
}

enum db_status store_metric_series_points(struct db_conn *conn, const struct store_series_ask *ask,
                                          struct store_series_points *out)
{
    const char *params[6] = {ask->cluster_id, ask->metric,  ask->start,
                             ask->end,        ask->node_id, ask->level};
    long long start = atoll(ask->start), end = atoll(ask->end);
    size_t nlen = 0, dlen = 0;
    FILE *nodes = open_memstream(&out->nodes, &nlen), *days = open_memstream(&out->days, &dlen);
    float v[DAY_SLOTS];
    bool present[DAY_SLOTS];
    enum db_status st;
    PGresult *res = db_query(conn, &series_in_range, 6, params, &st);
    int n = res != NULL ? PQntuples(res) : 0;

    out->values = (char *)real_array_begin((size_t)n * DAY_SLOTS, &out->values_len);
    fputc('{', nodes);
    fputc('{', days);
    for (int r = 0; r < n; r++) {
        long long day = atoll(PQgetvalue(res, r, 1));
        decode_cell(res, r, 2, PQgetvalue(res, r, 0), v, present);
        fprintf(nodes, "%s%s", r > 0 ? "," : "", PQgetvalue(res, r, 0));
        fprintf(days, "%s%lld", r > 0 ? "," : "", day);
        for (int k = 0; k < DAY_SLOTS; k++) {
            long long at = day + 60LL * k;
            real_array_put((unsigned char *)out->values, &out->values_len,
                           present[k] && at >= start && at < end, v[k]);
        }
    }
    PQclear(res);
    fputc('}', nodes);
    fputc('}', days);
    fclose(nodes);
    fclose(days);
    return st;
}
