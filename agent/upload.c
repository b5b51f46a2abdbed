/* upload.c -- snapshot files carried to cairnd (upload.h). */
#include "upload.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "crypto.h"
#include "gzip.h"
#include "log.h"
#include "xalloc.h"

/* zlib's fastest level: an RDB file's strings are compressed already
 * (rdbcompression), and the part's bytes must keep up with the disk. A
 * read that does not shrink below UPLOAD_STORE_RATIO of itself is data gzip
 * cannot help (values compressed already, random bytes): the reads after it
 * are stored as they are (level 0, gzip still, at the speed of a copy),
 * and every UPLOAD_PROBE_EVERY-th is tried again at level 1. */
#define UPLOAD_GZIP_LEVEL  1
#define UPLOAD_STORE_RATIO 0.9
#define UPLOAD_PROBE_EVERY 16
/* The upload's thread yields to the engines it shares the host with. */
#define UPLOAD_NICE 10
/* A part is tried this many times, 1 s, 2 s, 4 s ... apart. */
#define UPLOAD_TRIES 6

/* The uploads this process has taken on, "snapshot/shard", for as long as
 * it runs: each is done once (cairnd asks again only of a new process). */
static pthread_mutex_t taken_lock = PTHREAD_MUTEX_INITIALIZER;
static char **taken;
static size_t ntaken;

static bool take(const char *key)
{
    bool fresh = true;
    pthread_mutex_lock(&taken_lock);
    for (size_t i = 0; i < ntaken && fresh; i++)
        fresh = strcmp(taken[i], key) != 0;
    if (fresh) {
        taken = xrealloc(taken, (ntaken + 1) * sizeof(*taken));
        taken[ntaken++] = xstrdup(key);
    }
    pthread_mutex_unlock(&taken_lock);
    return fresh;
}

struct upload {
    char snapshot_id[AGENT_NODE_ID_MAX];
    int shard;
    char *path; /* the saved file */
    char **urls;
    size_t nurls, current;
    char *ca_file;
    char *credential;
    CURL *easy;
    char error[CURL_ERROR_SIZE];
    char answer[512]; /* the start of cairnd's answer, for messages */
    size_t answer_len;
};

static size_t on_answer(char *data, size_t size, size_t n, void *arg)
{
    struct upload *u = arg;
    size_t len = size * n, room = sizeof(u->answer) - 1 - u->answer_len;
    memcpy(u->answer + u->answer_len, data, len < room ? len : room);
    u->answer_len += len < room ? len : room;
    u->answer[u->answer_len] = '\0';
    return len;
}

/* One request to cairnd (each of its URLs in turn while one fails to
 * answer): its HTTP status, or 0 with u->error. */
static long send_request(struct upload *u, const char *method, const char *path,
                         struct curl_slist *headers, const void *body, size_t len)
{
    long status = 0;
    for (size_t tried = 0; tried < u->nurls; tried++) {
        char *url = xasprintf("%s%s", u->urls[u->current], path);
        curl_easy_reset(u->easy);
        curl_easy_setopt(u->easy, CURLOPT_URL, url);
        curl_easy_setopt(u->easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(u->easy, CURLOPT_USERAGENT, AGENT_USER_AGENT);
        curl_easy_setopt(u->easy, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
        curl_easy_setopt(u->easy, CURLOPT_TIMEOUT_MS, 120000L);
        curl_easy_setopt(u->easy, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(u->easy, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(u->easy, CURLOPT_SSL_VERIFYHOST, 2L);
        if (u->ca_file != NULL)
            curl_easy_setopt(u->easy, CURLOPT_CAINFO, u->ca_file);
        curl_easy_setopt(u->easy, CURLOPT_ERRORBUFFER, u->error);
        curl_easy_setopt(u->easy, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(u->easy, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(u->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        curl_easy_setopt(u->easy, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(u->easy, CURLOPT_WRITEFUNCTION, on_answer);
        curl_easy_setopt(u->easy, CURLOPT_WRITEDATA, u);
        u->error[0] = '\0';
        u->answer_len = 0;
        u->answer[0] = '\0';
        CURLcode rc = curl_easy_perform(u->easy);
        free(url);
        status = 0;
        if (rc == CURLE_OK)
            curl_easy_getinfo(u->easy, CURLINFO_RESPONSE_CODE, &status);
        else if (u->error[0] == '\0')
            snprintf(u->error, sizeof(u->error), "%s", curl_easy_strerror(rc));
        if (status != 0 && status != 502 && status != 503 && status != 504)
            return status;
        u->current = (u->current + 1) % u->nurls; /* the next cairnd */
    }
    return status;
}

/* A request tried again, with a growing pause, while it fails for want of
 * an answer or cairnd is briefly unavailable; its last status. */
static long send_retried(struct upload *u, const char *method, const char *path,
                         struct curl_slist *headers, const void *body, size_t len)
{
    long status = 0;
    for (int i = 0; i < UPLOAD_TRIES; i++) {
        status = send_request(u, method, path, headers, body, len);
        if (status != 0 && status < 500)
            return status;
        struct timespec pause = {1 << i, 0};
        nanosleep(&pause, NULL);
    }
    return status;
}

static struct curl_slist *auth_headers(const struct upload *u, const char *type)
{
    char *auth = xasprintf("Authorization: Bearer %s", u->credential);
    char *ct = xasprintf("Content-Type: %s", type);
    struct curl_slist *h = curl_slist_append(NULL, auth);
    h = curl_slist_append(h, ct);
    h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip */
    free(auth);
    free(ct);
    return h;
}

/* Send part number part: data[0..len), gzip members that expand to raw
 * bytes with SHA-256 sha (hex). False with err. */
static bool send_part(struct upload *u, int part, const void *data, size_t len,
                      unsigned long long raw, const char *sha, char *err, size_t errsize)
{
    char *path =
        xasprintf("/v1/agent/snapshots/%s/shards/%d/parts/%d", u->snapshot_id, u->shard, part);
    char *bytes = xasprintf("Cairn-Raw-Bytes: %llu", raw);
    char *hash = xasprintf("Cairn-Raw-Sha256: %s", sha);
    struct curl_slist *h = auth_headers(u, "application/octet-stream");
    h = curl_slist_append(h, bytes);
    h = curl_slist_append(h, hash);
    long status = send_retried(u, "PUT", path, h, data, len);
    curl_slist_free_all(h);
    free(path);
    free(bytes);
    free(hash);
    if (status == 200)
        return true;
    snprintf(err, errsize, "part %d: %s", part,
             status == 0 ? u->error : (u->answer[0] ? u->answer : "refused"));
    return false;
}

/* Tell cairnd the upload is complete (body: its size and SHA-256) or
 * failed ({"error"}). */
static bool send_complete(struct upload *u, json_t *body)
{
    char *path = xasprintf("/v1/agent/snapshots/%s/shards/%d/complete", u->snapshot_id, u->shard);
    char *text = json_dumps(body, JSON_COMPACT);
    struct curl_slist *h = auth_headers(u, "application/json");
    long status = send_retried(u, "POST", path, h, text, strlen(text));
    curl_slist_free_all(h);
    free(text);
    free(path);
    json_decref(body);
    return status == 204;
}

static void hex_digest(EVP_MD_CTX *ctx, char out[65])
{
    unsigned char d[CRYPTO_SHA256_LEN];
    EVP_DigestFinal_ex(ctx, d, NULL);
    crypto_hex(d, sizeof(d), out);
}

/* Read, compress and send the whole file. False with err. */
static bool send_file(struct upload *u, char *err, size_t errsize)
{
    int fd = open(u->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errsize, "cannot open %s: %s", u->path, strerror(errno));
        return false;
    }
    unsigned char *raw = xmalloc(UPLOAD_READ_BYTES);
    size_t cap = UPLOAD_PART_BYTES + UPLOAD_READ_BYTES, used = 0;
    unsigned char *part = xmalloc(cap);
    EVP_MD_CTX *whole = EVP_MD_CTX_new(), *piece = EVP_MD_CTX_new();
    unsigned long long total = 0, in_part = 0;
    int parts = 0, level = UPLOAD_GZIP_LEVEL, stored_reads = 0;
    bool ok = true, end = false;
    char sha[65];

    EVP_DigestInit_ex(whole, EVP_sha256(), NULL);
    EVP_DigestInit_ex(piece, EVP_sha256(), NULL);
    while (ok && !end) {
        ssize_t n = read(fd, raw, UPLOAD_READ_BYTES);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, errsize, "cannot read %s: %s", u->path, strerror(errno));
            ok = false;
            break;
        }
        end = n == 0;
        if (n > 0) {
            size_t zlen;
            bool probe = level == 0 && ++stored_reads % UPLOAD_PROBE_EVERY == 0;
            int use = probe ? UPLOAD_GZIP_LEVEL : level;
            unsigned char *z = gzip_compress_level(raw, (size_t)n, use, &zlen);
            if (use != 0)
                level = (double)zlen > UPLOAD_STORE_RATIO * (double)n ? 0 : UPLOAD_GZIP_LEVEL;
            if (used + zlen > cap) {
                cap = used + zlen;
                part = xrealloc(part, cap);
            }
            memcpy(part + used, z, zlen);
            used += zlen;
            free(z);
            EVP_DigestUpdate(whole, raw, (size_t)n);
            EVP_DigestUpdate(piece, raw, (size_t)n);
            total += (unsigned long long)n;
            in_part += (unsigned long long)n;
        }
        if (used >= UPLOAD_PART_BYTES || (end && (used > 0 || parts == 0))) {
            hex_digest(piece, sha);
            ok = used > 0 ? send_part(u, ++parts, part, used, in_part, sha, err, errsize) : false;
            if (used == 0)
                snprintf(err, errsize, "%s is empty", u->path);
            EVP_DigestInit_ex(piece, EVP_sha256(), NULL);
            used = 0;
            in_part = 0;
        }
    }
    /* The file was the snapshot's: the engine does not need it (a restart
     * reads its append-only file, or starts empty and syncs), and a
     * primary without either must not come back with old data from it.
     * One that a full sync wrote meanwhile is another file: left alone. */
    struct stat sent, now;
    if (fstat(fd, &sent) == 0 && stat(u->path, &now) == 0 && sent.st_ino == now.st_ino &&
        sent.st_dev == now.st_dev)
        unlink(u->path);
    close(fd);
    free(raw);
    free(part);
    EVP_MD_CTX_free(piece);
    if (ok) {
        hex_digest(whole, sha);
        ok = send_complete(u, json_pack("{s:i, s:I, s:s}", "parts", parts, "size_bytes",
                                        (json_int_t)total, "sha256", sha));
        if (!ok)
            snprintf(err, errsize, "cairnd did not take the upload as complete: %s",
                     u->answer[0] ? u->answer : u->error);
        else
            log_info("snapshot file sent", "snapshot=%s shard=%d parts=%d bytes=%llu",
                     u->snapshot_id, u->shard, parts, total);
    }
    EVP_MD_CTX_free(whole);
    return ok;
}

static void upload_free(struct upload *u)
{
    curl_easy_cleanup(u->easy);
    for (size_t i = 0; i < u->nurls; i++)
        free(u->urls[i]);
    free(u->urls);
    free(u->path);
    free(u->ca_file);
    free(u->credential);
    free(u);
}

static void *upload_main(void *arg)
{
    struct upload *u = arg;
    char err[2048];

    /* On Linux a thread has a nice value of its own. */
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), UPLOAD_NICE);

    if (!send_file(u, err, sizeof(err))) {
        log_warn("snapshot file not sent", "snapshot=%s shard=%d error=\"%s\"", u->snapshot_id,
                 u->shard, err);
        /* cairnd hears why; a part refused (the upload given up) needs no word. */
        send_complete(u, json_pack("{s:s}", "error", err));
    }
    upload_free(u);
    return NULL;
}

/* The node's data directory, when it runs here. */
static const char *data_dir_of(const struct agent *a, const char *node_id)
{
    for (size_t i = 0; i < a->n_nodes; i++)
        if (strcmp(a->nodes[i]->id, node_id) == 0)
            return a->nodes[i]->data_dir;
    return NULL;
}

static void start(struct agent *a, const json_t *entry)
{
    const char *snapshot = json_string_value(json_object_get(entry, "snapshot_id"));
    const char *node = json_string_value(json_object_get(entry, "node_id"));
    const json_t *shard = json_object_get(entry, "shard");
    const char *dir = node != NULL ? data_dir_of(a, node) : NULL;
    char key[96];

    if (snapshot == NULL || !agent_desired_valid_id(snapshot) || !json_is_integer(shard) ||
        json_integer_value(shard) < 0 || json_integer_value(shard) > 100000 || dir == NULL)
        return; /* not one this agent can take on */
    snprintf(key, sizeof(key), "%s/%lld", snapshot, (long long)json_integer_value(shard));
    if (!take(key))
        return;
    struct upload *u = xcalloc(1, sizeof(*u));
    snprintf(u->snapshot_id, sizeof(u->snapshot_id), "%s", snapshot);
    u->shard = (int)json_integer_value(shard);
    u->path = xasprintf("%s/dump.rdb", dir);
    for (const char *p = a->cfg->control_plane;; p++) {
        size_t len = strcspn(p, ",");
        u->urls = xrealloc(u->urls, (u->nurls + 1) * sizeof(*u->urls));
        u->urls[u->nurls++] = xstrndup(p, len);
        p += len;
        if (*p == '\0')
            break;
    }
    u->ca_file = a->cfg->control_plane_ca != NULL ? xstrdup(a->cfg->control_plane_ca) : NULL;
    u->credential = xstrdup(a->id.credential);
    u->easy = curl_easy_init();
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (u->easy == NULL || pthread_create(&t, &attr, upload_main, u) != 0) {
        log_error("could not start a snapshot upload", "snapshot=%s shard=%d", snapshot, u->shard);
        upload_free(u);
    } else {
        log_info("snapshot file upload started", "snapshot=%s shard=%d node=%s", snapshot, u->shard,
                 node);
    }
    pthread_attr_destroy(&attr);
}

void agent_uploads_apply(struct agent *a)
{
    size_t i;
    const json_t *entry;

    if (!a->have_id)
        return;
    json_array_foreach (a->desired.uploads, i, entry) {
        start(a, entry);
    }
}
