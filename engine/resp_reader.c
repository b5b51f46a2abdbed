/* resp_reader.c -- hiredis's RESP reader with every length checked against
 * a peer's limits before anything is allocated for it. */
#include "resp_reader.h"

#include <assert.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "xalloc.h"

/* What a bounded reader keeps beside hiredis's state (its privdata, which
 * hiredis hands to every object function through the read task). */
struct bound {
    const struct resp_limits *limits;
    size_t held;   /* what the reply being built holds so far, by our count */
    char why[128]; /* why a limit stopped this reader; "" while none has */
};

/* hiredis's own object functions (its static defaultFunctions, copied from
 * a reader it made), and the same with every create checked first. */
static redisReplyObjectFunctions hiredis_fn;
static redisReplyObjectFunctions bounded_fn;
static pthread_once_t fn_once = PTHREAD_ONCE_INIT;

static void oom(void)
{
    fprintf(stderr, "cairn: out of memory in hiredis\n");
    abort();
}

/* Record why b's reader must stop; NULL tells hiredis the object was not
 * made, which fails the reader (hiredis calls it out of memory; the message
 * here says what happened). */
static void *refuse(struct bound *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void *refuse(struct bound *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->why, sizeof(b->why), fmt, ap);
    va_end(ap);
    return NULL;
}

/* Count bytes against the reply's budget; false (with why set) past it. */
static bool charge(struct bound *b, size_t bytes)
{
    if (bytes > b->limits->max_reply - b->held) {
        refuse(b, "reply holding more than %zu bytes", b->limits->max_reply);
        return false;
    }
    b->held += bytes;
    return true;
}

static void *bounded_string(const redisReadTask *task, char *str, size_t len)
{
    struct bound *b = task->privdata;

    if (len > b->limits->max_string)
        return refuse(b, "string of %zu bytes, more than %zu", len, b->limits->max_string);
    if (!charge(b, sizeof(redisReply) + len + 1))
        return NULL;
    return hiredis_fn.createString(task, str, len);
}

static void *bounded_array(const redisReadTask *task, int elements)
{
    struct bound *b = task->privdata;
    int depth = 1;

    for (const redisReadTask *p = task->parent; p != NULL; p = p->parent)
        depth++;
    if (elements < 0 || (size_t)elements > b->limits->max_elements)
        return refuse(b, "array of %d elements, more than %zu", elements, b->limits->max_elements);
    if (depth > b->limits->max_depth)
        return refuse(b, "arrays nested %d deep, more than %d", depth, b->limits->max_depth);
    if (!charge(b, sizeof(redisReply) + (size_t)elements * sizeof(redisReply *)))
        return NULL;
    return hiredis_fn.createArray(task, elements);
}

static void *bounded_integer(const redisReadTask *task, long long value)
{
    struct bound *b = task->privdata;
    return charge(b, sizeof(redisReply)) ? hiredis_fn.createInteger(task, value) : NULL;
}

static void *bounded_nil(const redisReadTask *task)
{
    struct bound *b = task->privdata;
    return charge(b, sizeof(redisReply)) ? hiredis_fn.createNil(task) : NULL;
}

static void init_functions(void)
{
    redisReader *r = redisReaderCreate();

    if (r == NULL)
        oom();
    hiredis_fn = *r->fn;
    redisReaderFree(r);
    bounded_fn = hiredis_fn; /* freeObject, and whatever else is not overridden */
    bounded_fn.createString = bounded_string;
    bounded_fn.createArray = bounded_array;
    bounded_fn.createInteger = bounded_integer;
    bounded_fn.createNil = bounded_nil;
}

void resp_reader_bound(redisReader *r, const struct resp_limits *limits)
{
    struct bound *b = xcalloc(1, sizeof(*b));

    pthread_once(&fn_once, init_functions);
    assert(r->len == 0 && r->privdata == NULL);
    b->limits = limits;
    r->privdata = b;
    r->fn = &bounded_fn;
}

void resp_reader_unbound(redisReader *r)
{
    free(r->privdata);
    r->privdata = NULL;
}

redisReader *resp_reader_new(const struct resp_limits *limits)
{
    redisReader *r = redisReaderCreate();

    if (r == NULL)
        oom();
    resp_reader_bound(r, limits);
    return r;
}

void resp_reader_free(redisReader *r)
{
    if (r == NULL)
        return;
    resp_reader_unbound(r);
    redisReaderFree(r);
}

size_t resp_reader_buffered(const redisReader *r)
{
    return r->len - r->pos;
}

/* Fail r as hiredis fails a reader (so that every later call fails too)
 * and let go of what it holds. */
static void spend(redisReader *r, struct bound *b)
{
    if (r->reply != NULL)
        r->fn->freeObject(r->reply);
    r->reply = NULL;
    sdsfree(r->buf);
    r->buf = NULL;
    r->pos = r->len = 0;
    r->ridx = -1;
    r->err = REDIS_ERR_PROTOCOL;
    snprintf(r->errstr, sizeof(r->errstr), "%s", b->why);
}

int resp_reader_next(redisReader *r, redisReply **reply, char *err, size_t errsize)
{
    struct bound *b = r->privdata;
    void *obj = NULL;

    *reply = NULL;
    if (redisReaderGetReply(r, &obj) != REDIS_OK) {
        if (b->why[0] != '\0') {
            /* hiredis took the refusal for out of memory: make it the
             * protocol error it is, for whoever looks at r (or at a
             * context reading through it) later. */
            r->err = REDIS_ERR_PROTOCOL;
            snprintf(r->errstr, sizeof(r->errstr), "%s", b->why);
        } else if (r->err == REDIS_ERR_OOM) {
            oom();
        }
        snprintf(err, errsize, "%s", r->errstr);
        return -1;
    }
    if (obj != NULL) {
        b->held = 0;
        *reply = obj;
        return 1;
    }
    if (resp_reader_buffered(r) > b->limits->max_buffered) {
        refuse(b, "%zu bytes without a complete reply, more than %zu", resp_reader_buffered(r),
               b->limits->max_buffered);
        spend(r, b);
        snprintf(err, errsize, "%s", b->why);
        return -1;
    }
    return 0;
}

static bool is_request(const redisReply *q)
{
    if (q->type != REDIS_REPLY_ARRAY || q->elements == 0)
        return false;
    for (size_t i = 0; i < q->elements; i++) {
        if (q->element[i]->type != REDIS_REPLY_STRING)
            return false;
    }
    return true;
}

int resp_reader_next_request(redisReader *r, redisReply **request, char *err, size_t errsize)
{
    int rc = resp_reader_next(r, request, err, errsize);

    if (rc != 1 || is_request(*request))
        return rc;
    freeReplyObject(*request);
    *request = NULL;
    struct bound *b = r->privdata;
    refuse(b, "request is not an array of bulk strings");
    spend(r, b);
    snprintf(err, errsize, "%s", b->why);
    return -1;
}
