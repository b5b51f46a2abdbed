/* resp.c -- blocking and poll-driven RESP connections over hiredis, and
 * helpers for reading reply trees. */
#include "resp.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "xalloc.h"

/* The largest arrays Cairn asks for are CLUSTER SLOT-STATS's 16384 slots
 * (and CLUSTER SLOTS at its most fragmented): four times that. */
#define ENGINE_MAX_ELEMENTS (4 * 16384)
/* hiredis's own ceiling; COMMAND nests arrays 8 deep (Valkey 8.0). */
#define ENGINE_MAX_DEPTH 8
/* CLUSTER NODES of a 1000-node cluster is ~250 KB, INFO everything tens of
 * KB: 16 MB is far above any string Cairn asks for. */
#define ENGINE_MAX_STRING (16 << 20)
/* CLUSTER SLOT-STATS over every slot builds a tree of ~11 MB. */
#define ENGINE_MAX_REPLY (64 << 20)

const struct resp_limits resp_engine_limits = {
    .max_elements = ENGINE_MAX_ELEMENTS,
    .max_depth = ENGINE_MAX_DEPTH,
    .max_string = ENGINE_MAX_STRING,
    .max_reply = ENGINE_MAX_REPLY,
    .max_buffered = 2 * ENGINE_MAX_STRING, /* a whole string and what follows it */
};

struct resp_conn {
    redisContext *ctx;
    char *addr; /* "host:port", for messages */
    bool blocking;
    int command_timeout_ms;
    enum resp_error last;
    bool wants_write;  /* non-blocking: the output buffer is not empty */
    bool auth_pending; /* non-blocking: the first reply answers our AUTH */
    size_t pending;    /* non-blocking: appended commands not yet answered */
};

static int timeout_or_default(int ms)
{
    return ms > 0 ? ms : RESP_DEFAULT_TIMEOUT_MS;
}

static struct timeval ms_to_timeval(int ms)
{
    return (struct timeval){.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
}

/* Out of memory inside hiredis is handled as everywhere else in Cairn. */
static void check_oom(const redisContext *ctx)
{
    if (ctx == NULL || ctx->err == REDIS_ERR_OOM) {
        fprintf(stderr, "cairn: out of memory in hiredis\n");
        abort();
    }
}

/* Sort a failed context's error into our kinds. hiredis 0.14 reports a
 * socket timeout as an I/O error with strerror(EAGAIN) as its text (1.x
 * has REDIS_ERR_TIMEOUT), and a connect timeout as strerror(ETIMEDOUT). */
static enum resp_error classify(const redisContext *ctx)
{
    check_oom(ctx);
    switch (ctx->err) {
    case REDIS_ERR_PROTOCOL:
        return RESP_ERR_PROTOCOL;
#ifdef REDIS_ERR_TIMEOUT
    case REDIS_ERR_TIMEOUT:
        return RESP_ERR_TIMEOUT;
#endif
    case REDIS_ERR_IO:
        if (strcmp(ctx->errstr, strerror(EAGAIN)) == 0 ||
            strcmp(ctx->errstr, strerror(EWOULDBLOCK)) == 0 ||
            strcmp(ctx->errstr, strerror(ETIMEDOUT)) == 0)
            return RESP_ERR_TIMEOUT;
        return RESP_ERR_IO;
    default:
        return RESP_ERR_IO;
    }
}

/* Record the context's failure on c and describe it in err. */
static void fail_ctx(struct resp_conn *c, char *err, size_t errsize)
{
    c->last = classify(c->ctx);
    if (c->last == RESP_ERR_TIMEOUT && c->blocking)
        snprintf(err, errsize, "%s: no reply within %d ms", c->addr, c->command_timeout_ms);
    else
        snprintf(err, errsize, "%s: %s", c->addr, c->ctx->errstr);
}

static struct resp_conn *conn_new(redisContext *ctx, const struct resp_options *opt, bool blocking)
{
    struct resp_conn *c = xcalloc(1, sizeof(*c));
    c->ctx = ctx;
    c->addr = xasprintf("%s:%d", opt->host, opt->port);
    c->blocking = blocking;
    c->command_timeout_ms = timeout_or_default(opt->command_timeout_ms);
    resp_reader_bound(ctx->reader, &resp_engine_limits);
    return c;
}

void resp_close(struct resp_conn *c)
{
    if (c == NULL)
        return;
    resp_reader_unbound(c->ctx->reader);
    redisFree(c->ctx);
    free(c->addr);
    free(c);
}

enum resp_error resp_last_error(const struct resp_conn *c)
{
    return c->last;
}

/* The argv of AUTH [username] password; returns argc. */
static int auth_argv(const struct resp_options *opt, const char *argv[3])
{
    int argc = 0;
    argv[argc++] = "AUTH";
    if (opt->username != NULL)
        argv[argc++] = opt->username;
    argv[argc++] = opt->password;
    return argc;
}

/* A blocking connection on ctx, connected: set the command timeout and
 * authenticate as opt asks. NULL with err on failure, ctx freed; *refused
 * (when not NULL) says whether the engine refused the login. */
static struct resp_conn *blocking_ready(redisContext *ctx, const struct resp_options *opt,
                                        bool *refused, char *err, size_t errsize)
{
    struct resp_conn *c = conn_new(ctx, opt, true);
    if (redisSetTimeout(ctx, ms_to_timeval(c->command_timeout_ms)) != REDIS_OK) {
        snprintf(err, errsize, "could not set timeouts on %s: %s", c->addr, ctx->errstr);
        resp_close(c);
        return NULL;
    }
    if (opt->password != NULL) {
        const char *argv[3];
        char why[256];
        redisReply *r = resp_command_argv(c, auth_argv(opt, argv), argv, NULL, why, sizeof(why));
        if (r == NULL) {
            snprintf(err, errsize, "could not authenticate to %s: %s", c->addr, why);
            if (refused != NULL)
                *refused = c->last == RESP_ERR_REPLY;
            resp_close(c);
            return NULL;
        }
        resp_reply_free(r);
    }
    return c;
}

struct resp_conn *resp_connect(const struct resp_options *opt, char *err, size_t errsize)
{
    return resp_connect_login(opt, NULL, err, errsize);
}

struct resp_conn *resp_connect_login(const struct resp_options *opt, bool *refused, char *err,
                                     size_t errsize)
{
    if (refused != NULL)
        *refused = false;
    int connect_ms = timeout_or_default(opt->connect_timeout_ms);
    redisContext *ctx = redisConnectWithTimeout(opt->host, opt->port, ms_to_timeval(connect_ms));

    check_oom(ctx);
    if (ctx->err != 0) {
        if (classify(ctx) == RESP_ERR_TIMEOUT)
            snprintf(err, errsize, "could not connect to %s:%d: no connection within %d ms",
                     opt->host, opt->port, connect_ms);
        else
            snprintf(err, errsize, "could not connect to %s:%d: %s", opt->host, opt->port,
                     ctx->errstr);
        redisFree(ctx);
        return NULL;
    }
    return blocking_ready(ctx, opt, refused, err, errsize);
}

struct resp_conn *resp_connect_fd(int fd, const struct resp_options *opt, char *err, size_t errsize)
{
    redisContext *ctx = redisConnectFd(fd);

    check_oom(ctx);
    return blocking_ready(ctx, opt, NULL, err, errsize);
}

struct resp_conn *resp_connect_nonblock(const struct resp_options *opt, char *err, size_t errsize)
{
    redisContext *ctx = redisConnectNonBlock(opt->host, opt->port);

    check_oom(ctx);
    if (ctx->err != 0) {
        snprintf(err, errsize, "could not connect to %s:%d: %s", opt->host, opt->port, ctx->errstr);
        redisFree(ctx);
        return NULL;
    }

    struct resp_conn *c = conn_new(ctx, opt, false);
    if (opt->password != NULL) {
        const char *argv[3];
        if (!resp_append_argv(c, auth_argv(opt, argv), argv, NULL, err, errsize)) {
            resp_close(c);
            return NULL;
        }
        c->pending--; /* AUTH's reply is ours, not the caller's */
        c->auth_pending = true;
    }
    return c;
}

bool resp_host_is_address(const char *host)
{
    unsigned char addr[16];

    return inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
}

/* The next reply read so far (resp_reader_next()); a reply beyond the
 * limits fails c as a protocol error. */
static int take_reply(struct resp_conn *c, redisReply **reply, char *err, size_t errsize)
{
    char why[128];
    int rc = resp_reader_next(c->ctx->reader, reply, why, sizeof(why));

    if (rc < 0) {
        c->last = RESP_ERR_PROTOCOL;
        snprintf(err, errsize, "%s: %s", c->addr, why);
    }
    return rc;
}

/* Send one formatted command on a blocking connection and wait for its
 * reply; the contract is resp_command()'s. This is redisGetReply()'s loop,
 * with the reply taken through the bounded reader. */
static redisReply *run(struct resp_conn *c, const char *cmd, size_t len, char *err, size_t errsize)
{
    redisReply *reply = NULL;
    int done = 0, rc;

    assert(c->blocking);
    if (redisAppendFormattedCommand(c->ctx, cmd, len) != REDIS_OK) {
        fail_ctx(c, err, errsize);
        return NULL;
    }
    while (!done) {
        if (redisBufferWrite(c->ctx, &done) != REDIS_OK) {
            fail_ctx(c, err, errsize);
            return NULL;
        }
    }
    while ((rc = take_reply(c, &reply, err, errsize)) == 0) {
        if (redisBufferRead(c->ctx) != REDIS_OK) {
            fail_ctx(c, err, errsize);
            return NULL;
        }
    }
    if (rc < 0)
        return NULL;
    if (!resp_reply_check(reply, err, errsize)) {
        c->last = RESP_ERR_REPLY;
        resp_reply_free(reply);
        return NULL;
    }
    c->last = RESP_OK;
    return reply;
}

/* Format a command; an invalid format is a bug in our own code. */
static int format_command(char **cmd, const char *fmt, va_list ap)
{
    int len = redisvFormatCommand(cmd, fmt, ap);
    assert(len != -2 && "invalid hiredis command format");
    if (len < 0) {
        fprintf(stderr, "cairn: out of memory formatting a command\n");
        abort();
    }
    return len;
}

static int format_argv(char **cmd, int argc, const char **argv, const size_t *argvlen)
{
    int len = redisFormatCommandArgv(cmd, argc, argv, argvlen);
    if (len < 0) {
        fprintf(stderr, "cairn: out of memory formatting a command\n");
        abort();
    }
    return len;
}

redisReply *resp_command(struct resp_conn *c, char *err, size_t errsize, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    redisReply *r = resp_vcommand(c, err, errsize, fmt, ap);
    va_end(ap);
    return r;
}

redisReply *resp_vcommand(struct resp_conn *c, char *err, size_t errsize, const char *fmt,
                          va_list ap)
{
    char *cmd;
    int len = format_command(&cmd, fmt, ap);
    redisReply *r = run(c, cmd, (size_t)len, err, errsize);
    redisFreeCommand(cmd);
    return r;
}

redisReply *resp_command_argv(struct resp_conn *c, int argc, const char **argv,
                              const size_t *argvlen, char *err, size_t errsize)
{
    char *cmd;
    int len = format_argv(&cmd, argc, argv, argvlen);
    redisReply *r = run(c, cmd, (size_t)len, err, errsize);
    redisFreeCommand(cmd);
    return r;
}

bool resp_fail_reply(struct resp_conn *c, char *err, size_t errsize, const char *fmt, ...)
{
    char why[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    c->last = RESP_ERR_REPLY;
    snprintf(err, errsize, "%s: %s", c->addr, why);
    return false;
}

bool resp_ping(struct resp_conn *c, char *err, size_t errsize)
{
    redisReply *r = resp_command(c, err, errsize, "PING");
    if (r == NULL)
        return false;
    bool ok = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
    if (!ok)
        resp_fail_reply(c, err, errsize, "unexpected reply to PING");
    resp_reply_free(r);
    return ok;
}

struct engine_info *resp_info(struct resp_conn *c, const char *sections, char *err, size_t errsize)
{
    char *words = xstrdup(sections != NULL ? sections : "");
    size_t max = 2;
    for (const char *p = words; *p; p++)
        max += *p == ' ';
    const char **argv = xcalloc(max, sizeof(*argv));
    int argc = 0;
    char *save = NULL;

    argv[argc++] = "INFO";
    for (char *w = strtok_r(words, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    redisReply *r = resp_command_argv(c, argc, argv, NULL, err, errsize);
    free(argv);
    free(words);
    if (r == NULL)
        return NULL;

    struct engine_info *info = NULL;
    if (resp_reply_is_string(r)) {
        info = engine_info_parse(r->str, r->len);
    } else {
        c->last = RESP_ERR_REPLY;
        snprintf(err, errsize, "%s: INFO did not return a bulk string", c->addr);
    }
    resp_reply_free(r);
    return info;
}

int resp_fd(const struct resp_conn *c)
{
    return c != NULL ? c->ctx->fd : -1;
}

/* Queue an already formatted command; takes ownership of cmd. */
static bool append(struct resp_conn *c, char *cmd, int len, char *err, size_t errsize)
{
    int rc = redisAppendFormattedCommand(c->ctx, cmd, (size_t)len);

    redisFreeCommand(cmd);
    if (c->ctx->err != 0 || rc != REDIS_OK) {
        fail_ctx(c, err, errsize);
        return false;
    }
    c->wants_write = true;
    c->pending++;
    return true;
}

bool resp_append(struct resp_conn *c, char *err, size_t errsize, const char *fmt, ...)
{
    char *cmd;
    va_list ap;

    va_start(ap, fmt);
    int len = format_command(&cmd, fmt, ap);
    va_end(ap);
    return append(c, cmd, len, err, errsize);
}

bool resp_append_argv(struct resp_conn *c, int argc, const char **argv, const size_t *argvlen,
                      char *err, size_t errsize)
{
    char *cmd;
    int len = format_argv(&cmd, argc, argv, argvlen);
    return append(c, cmd, len, err, errsize);
}

bool resp_wants_write(const struct resp_conn *c)
{
    return c->wants_write;
}

short resp_poll_events(const struct resp_conn *c)
{
    if (c == NULL)
        return 0;
    return (short)(POLLIN | (c->wants_write ? POLLOUT : 0));
}

int resp_flush(struct resp_conn *c, char *err, size_t errsize)
{
    int done = 0;

    if (redisBufferWrite(c->ctx, &done) != REDIS_OK) {
        fail_ctx(c, err, errsize);
        return -1;
    }
    c->wants_write = !done;
    return done ? 1 : 0;
}

int resp_read(struct resp_conn *c, char *err, size_t errsize)
{
    if (redisBufferRead(c->ctx) != REDIS_OK) {
        fail_ctx(c, err, errsize);
        return -1;
    }
    return 0;
}

int resp_next_reply(struct resp_conn *c, redisReply **reply, char *err, size_t errsize)
{
    *reply = NULL;
    for (;;) {
        redisReply *r = NULL;
        int rc = take_reply(c, &r, err, errsize);
        if (rc <= 0)
            return rc;
        if (c->auth_pending) {
            char why[256];
            c->auth_pending = false;
            bool ok = resp_reply_check(r, why, sizeof(why));
            resp_reply_free(r);
            if (!ok) {
                c->last = RESP_ERR_AUTH;
                snprintf(err, errsize, "could not authenticate to %s: %s", c->addr, why);
                return -1;
            }
            continue;
        }
        if (c->pending > 0)
            c->pending--;
        *reply = r;
        return 1;
    }
}

size_t resp_pending(const struct resp_conn *c)
{
    return c->pending;
}

void resp_reply_free(redisReply *reply)
{
    if (reply != NULL)
        freeReplyObject(reply);
}

bool resp_reply_check(const redisReply *reply, char *err, size_t errsize)
{
    if (reply->type != REDIS_REPLY_ERROR)
        return true;
    snprintf(err, errsize, "%.*s", (int)reply->len, reply->str);
    return false;
}

bool resp_reply_is_string(const redisReply *reply)
{
    switch (reply->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
#ifdef REDIS_REPLY_VERB
    case REDIS_REPLY_VERB:
#endif
        return true;
    default:
        return false;
    }
}

bool resp_reply_integer(const redisReply *reply, long long *out)
{
    if (reply->type == REDIS_REPLY_INTEGER) {
        *out = reply->integer;
        return true;
    }
    return resp_reply_is_string(reply) && engine_info_span_ll(reply->str, reply->len, out);
}

bool resp_reply_is_map(const redisReply *reply)
{
#ifdef REDIS_REPLY_MAP
    if (reply->type == REDIS_REPLY_MAP)
        return true;
#endif
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements % 2 != 0)
        return false;
    for (size_t i = 0; i < reply->elements; i += 2) {
        if (!resp_reply_is_string(reply->element[i]))
            return false;
    }
    return true;
}

const redisReply *resp_reply_map_get(const redisReply *reply, const char *key)
{
    size_t klen = strlen(key);

    if (!resp_reply_is_map(reply))
        return NULL;
    for (size_t i = 0; i + 1 < reply->elements; i += 2) {
        const redisReply *k = reply->element[i];
        if (resp_reply_is_string(k) && k->len == klen && memcmp(k->str, key, klen) == 0)
            return reply->element[i + 1];
    }
    return NULL;
}
