/* resp.c -- blocking and poll-driven RESP connections to the engines,
 * plain or TLS (OpenSSL), over sockets of our own: hiredis formats the
 * commands and parses the replies (bounded: resp_reader.h); and helpers for
 * reading reply trees. */
#include "resp.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

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

#define DATA_MAX_STRING ((512u << 20) + (64u << 10)) /* a value, and a DUMP's footer */

const struct resp_limits resp_data_limits = {
    .max_elements = ENGINE_MAX_ELEMENTS,
    .max_depth = ENGINE_MAX_DEPTH,
    .max_string = DATA_MAX_STRING,
    .max_reply = DATA_MAX_STRING + ENGINE_MAX_REPLY,
    .max_buffered = 2 * (size_t)DATA_MAX_STRING,
};

#define READ_CHUNK 16384
/* One resp_read() takes at most this much, so that an engine that keeps
 * sending cannot hold the poll loop (the reader's limits fail it soon). */
#define READ_PER_CALL (16 << 20)

struct resp_tls {
    SSL_CTX *ctx;
};

/* A non-blocking connection's way to being usable. */
enum phase { PHASE_CONNECTING, PHASE_HANDSHAKE, PHASE_READY };

struct resp_conn {
    int fd;
    SSL *ssl; /* NULL: plain TCP */
    redisReader *reader;
    char *out; /* commands not yet written: out[out_pos..out_len) */
    size_t out_len, out_pos, out_cap;
    char *addr; /* "host:port", for messages */
    bool blocking;
    int command_timeout_ms;
    enum resp_error last;
    enum phase phase;
    short tls_wants;   /* the event the TLS handshake waits for */
    bool auth_pending; /* non-blocking: the first reply answers our AUTH */
    size_t pending;    /* non-blocking: appended commands not yet answered */
};

static int timeout_or_default(int ms)
{
    return ms > 0 ? ms : RESP_DEFAULT_TIMEOUT_MS;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until fd is ready for events or the deadline passes: 1 ready, 0 the
 * deadline, -1 poll failed (errno). */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - now_ms();
        struct pollfd p = {.fd = fd, .events = events};
        if (left <= 0)
            return 0;
        int rc = poll(&p, 1, (int)left);
        if (rc >= 0 || errno != EINTR)
            return rc > 0 ? 1 : rc;
    }
}

/* c failed as kind; err = "h:p: " and what fmt says. Returns false. */
static bool vfail_as(struct resp_conn *c, enum resp_error kind, char *err, size_t errsize,
                     const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));
static bool vfail_as(struct resp_conn *c, enum resp_error kind, char *err, size_t errsize,
                     const char *fmt, va_list ap)
{
    char why[256];

    vsnprintf(why, sizeof(why), fmt, ap);
    c->last = kind;
    snprintf(err, errsize, "%s: %s", c->addr, why);
    return false;
}

static bool fail_as(struct resp_conn *c, enum resp_error kind, char *err, size_t errsize,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static bool fail_as(struct resp_conn *c, enum resp_error kind, char *err, size_t errsize,
                    const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfail_as(c, kind, err, errsize, fmt, ap);
    va_end(ap);
    return false;
}

/* What OpenSSL says went wrong, certificate verification first. */
static void tls_reason(const struct resp_conn *c, char *why, size_t size)
{
    long verify = c->ssl != NULL ? SSL_get_verify_result(c->ssl) : X509_V_OK;
    unsigned long e = ERR_get_error();

    if (verify != X509_V_OK)
        snprintf(why, size, "TLS: the engine's certificate is not trusted: %s",
                 X509_verify_cert_error_string(verify));
    else if (e != 0)
        snprintf(why, size, "TLS: %s", ERR_reason_error_string(e));
    else
        snprintf(why, size, "TLS: the connection failed (%s)",
                 errno != 0 ? strerror(errno) : "closed by the engine");
    ERR_clear_error();
}

/* ---- TLS ---------------------------------------------------------------- */

struct resp_tls *resp_tls_new(const char *ca_pem, char *err, size_t errsize)
{
    struct resp_tls *t = xcalloc(1, sizeof(*t));
    BIO *b = BIO_new_mem_buf(ca_pem, -1);
    X509 *x;
    int added = 0;

    t->ctx = SSL_CTX_new(TLS_client_method());
    if (t->ctx == NULL || b == NULL) {
        BIO_free(b);
        resp_tls_free(t);
        snprintf(err, errsize, "could not set up TLS");
        return NULL;
    }
    X509_STORE *store = SSL_CTX_get_cert_store(t->ctx);
    while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
        added += X509_STORE_add_cert(store, x) == 1;
        X509_free(x);
    }
    BIO_free(b);
    ERR_clear_error();
    if (added == 0) {
        resp_tls_free(t);
        snprintf(err, errsize, "no certificate authority in the PEM text given");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    /* A write retried after WANT_WRITE may come from a grown buffer. */
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    return t;
}

void resp_tls_free(struct resp_tls *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    free(t);
}

/* Begin TLS on c's socket, checking the engine's certificate names host
 * (an address or a DNS name). */
static bool tls_begin(struct resp_conn *c, const struct resp_options *opt, char *err,
                      size_t errsize)
{
    c->ssl = SSL_new(opt->tls->ctx);
    if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1)
        return fail_as(c, RESP_ERR_IO, err, errsize, "TLS: could not set up the connection");
    bool ok = resp_host_is_address(opt->host)
                  ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), opt->host) == 1
                  : SSL_set1_host(c->ssl, opt->host) == 1 &&
                        SSL_set_tlsext_host_name(c->ssl, opt->host) == 1;
    if (!ok)
        return fail_as(c, RESP_ERR_IO, err, errsize, "TLS: cannot check a certificate for %s",
                       opt->host);
    SSL_set_connect_state(c->ssl);
    c->phase = PHASE_HANDSHAKE;
    c->tls_wants = POLLOUT;
    return true;
}

/* One step of the handshake: 1 done, 0 waiting for c->tls_wants, -1
 * failed. */
static int handshake_step(struct resp_conn *c, char *err, size_t errsize)
{
    char why[256];

    errno = 0;
    int rc = SSL_do_handshake(c->ssl);
    if (rc == 1) {
        c->phase = PHASE_READY;
        return 1;
    }
    switch (SSL_get_error(c->ssl, rc)) {
    case SSL_ERROR_WANT_READ:
        c->tls_wants = POLLIN;
        return 0;
    case SSL_ERROR_WANT_WRITE:
        c->tls_wants = POLLOUT;
        return 0;
    default:
        tls_reason(c, why, sizeof(why));
        fail_as(c, RESP_ERR_IO, err, errsize, "%s", why);
        return -1;
    }
}

/* ---- bytes in and out --------------------------------------------------- */

/* Write what the socket takes of buf: > 0 bytes written, 0 it would block
 * (*want: the event to wait for), -1 failed (err). */
static ssize_t put(struct resp_conn *c, const char *buf, size_t len, short *want, char *err,
                   size_t errsize)
{
    char why[256];

    if (c->ssl == NULL) {
        ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
        if (n >= 0)
            return n;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            *want = POLLOUT;
            return 0;
        }
        fail_as(c, RESP_ERR_IO, err, errsize, "%s", strerror(errno));
        return -1;
    }
    errno = 0;
    int n = SSL_write(c->ssl, buf, (int)(len > INT32_MAX ? INT32_MAX : len));
    if (n > 0)
        return n;
    switch (SSL_get_error(c->ssl, n)) {
    case SSL_ERROR_WANT_READ:
        *want = POLLIN;
        return 0;
    case SSL_ERROR_WANT_WRITE:
        *want = POLLOUT;
        return 0;
    default:
        tls_reason(c, why, sizeof(why));
        fail_as(c, RESP_ERR_IO, err, errsize, "%s", why);
        return -1;
    }
}

/* Read what the socket has into the reader: > 0 bytes, 0 it would block
 * (*want), -1 failed or closed (err). */
static ssize_t take(struct resp_conn *c, short *want, char *err, size_t errsize)
{
    char buf[READ_CHUNK], why[256];
    ssize_t n;

    if (c->ssl == NULL) {
        n = recv(c->fd, buf, sizeof(buf), 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            *want = POLLIN;
            return 0;
        }
        if (n < 0) {
            fail_as(c, RESP_ERR_IO, err, errsize, "%s", strerror(errno));
            return -1;
        }
    } else {
        errno = 0;
        int r = SSL_read(c->ssl, buf, sizeof(buf));
        n = r;
        if (r <= 0) {
            switch (SSL_get_error(c->ssl, r)) {
            case SSL_ERROR_WANT_READ:
                *want = POLLIN;
                return 0;
            case SSL_ERROR_WANT_WRITE:
                *want = POLLOUT;
                return 0;
            case SSL_ERROR_ZERO_RETURN:
                n = 0;
                break;
            case SSL_ERROR_SYSCALL:
                if (errno == 0) {
                    n = 0; /* closed without a TLS goodbye */
                    break;
                }
                /* fall through */
            default:
                tls_reason(c, why, sizeof(why));
                fail_as(c, RESP_ERR_IO, err, errsize, "%s", why);
                return -1;
            }
        }
    }
    if (n == 0) {
        fail_as(c, RESP_ERR_IO, err, errsize, "the engine closed the connection");
        return -1;
    }
    if (redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK) {
        fail_as(c, RESP_ERR_PROTOCOL, err, errsize, "could not buffer the reply");
        return -1;
    }
    return n;
}

static void out_append(struct resp_conn *c, const char *cmd, size_t len)
{
    if (c->out_pos == c->out_len)
        c->out_pos = c->out_len = 0;
    if (c->out_len + len > c->out_cap) {
        c->out_cap = (c->out_len + len) * 2;
        c->out = xrealloc(c->out, c->out_cap);
    }
    memcpy(c->out + c->out_len, cmd, len);
    c->out_len += len;
}

/* ---- connecting --------------------------------------------------------- */

static struct resp_conn *conn_new(int fd, const struct resp_options *opt, bool blocking)
{
    struct resp_conn *c = xcalloc(1, sizeof(*c));
    c->fd = fd;
    c->reader = resp_reader_new(opt->limits != NULL ? opt->limits : &resp_engine_limits);
    c->addr = xasprintf("%s:%d", opt->host, opt->port);
    c->blocking = blocking;
    c->command_timeout_ms = timeout_or_default(opt->command_timeout_ms);
    c->phase = PHASE_READY;
    return c;
}

void resp_close(struct resp_conn *c)
{
    if (c == NULL)
        return;
    SSL_free(c->ssl);
    if (c->fd >= 0)
        close(c->fd);
    resp_reader_free(c->reader);
    free(c->out);
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

/* A non-blocking TCP socket connecting to opt's address: its fd, with
 * *connected saying whether it already is; -1 with err. */
static int open_socket(const struct resp_options *opt, bool *connected, char *err, size_t errsize)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai, *p;
    char port[16];
    int fd = -1, saved = 0, one = 1;

    snprintf(port, sizeof(port), "%d", opt->port);
    int rc = getaddrinfo(opt->host, port, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errsize, "could not connect to %s:%d: %s", opt->host, opt->port,
                 gai_strerror(rc));
        return -1;
    }
    for (p = ai; p != NULL && fd < 0; p = p->ai_next) {
        fd = socket(p->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        *connected = connect(fd, p->ai_addr, p->ai_addrlen) == 0;
        if (!*connected && errno != EINPROGRESS) {
            saved = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        snprintf(err, errsize, "could not connect to %s:%d: %s", opt->host, opt->port,
                 strerror(saved != 0 ? saved : ECONNREFUSED));
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* The socket's pending error once a connect() has ended (0: connected). */
static int connect_error(int fd)
{
    int e = 0;
    socklen_t len = sizeof(e);
    return getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) == 0 ? e : errno;
}

/* Blocking: finish c's TLS handshake by the deadline. */
static bool handshake_by(struct resp_conn *c, int64_t deadline, int timeout_ms, char *err,
                         size_t errsize)
{
    int rc;
    while ((rc = handshake_step(c, err, errsize)) == 0) {
        if (wait_fd(c->fd, c->tls_wants, deadline) <= 0)
            return fail_as(c, RESP_ERR_TIMEOUT, err, errsize, "no TLS handshake within %d ms",
                           timeout_ms);
    }
    return rc == 1;
}

static redisReply *run(struct resp_conn *c, const char *cmd, size_t len, char *err, size_t errsize);

/* A blocking connection on c, connected (and through TLS): authenticate as
 * opt asks. NULL with err on failure, c freed; *refused (when not NULL)
 * says whether the engine refused the login. */
static struct resp_conn *blocking_ready(struct resp_conn *c, const struct resp_options *opt,
                                        bool *refused, char *err, size_t errsize)
{
    if (opt->password != NULL) {
        const char *argv[3];
        char why[256], *cmd;
        int len = redisFormatCommandArgv(&cmd, auth_argv(opt, argv), argv, NULL);
        if (len < 0) {
            fprintf(stderr, "cairn: out of memory formatting a command\n");
            abort();
        }
        redisReply *r = run(c, cmd, (size_t)len, why, sizeof(why));
        redisFreeCommand(cmd);
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
    int connect_ms = timeout_or_default(opt->connect_timeout_ms);
    int64_t deadline = now_ms() + connect_ms;
    bool connected = false;
    char why[256];

    if (refused != NULL)
        *refused = false;
    int fd = open_socket(opt, &connected, err, errsize);
    if (fd < 0)
        return NULL;
    if (!connected) {
        int rc = wait_fd(fd, POLLOUT, deadline);
        int e = rc > 0 ? connect_error(fd) : rc == 0 ? ETIMEDOUT : errno;
        if (e != 0) {
            if (e == ETIMEDOUT)
                snprintf(err, errsize, "could not connect to %s:%d: no connection within %d ms",
                         opt->host, opt->port, connect_ms);
            else
                snprintf(err, errsize, "could not connect to %s:%d: %s", opt->host, opt->port,
                         strerror(e));
            close(fd);
            return NULL;
        }
    }
    struct resp_conn *c = conn_new(fd, opt, true);
    if (opt->tls != NULL && (!tls_begin(c, opt, why, sizeof(why)) ||
                             !handshake_by(c, deadline, connect_ms, why, sizeof(why)))) {
        snprintf(err, errsize, "could not connect to %s", why);
        resp_close(c);
        return NULL;
    }
    return blocking_ready(c, opt, refused, err, errsize);
}

struct resp_conn *resp_connect_fd(int fd, const struct resp_options *opt, char *err, size_t errsize)
{
    int flags = fcntl(fd, F_GETFL);

    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        snprintf(err, errsize, "could not use the socket for %s:%d: %s", opt->host, opt->port,
                 strerror(errno));
        close(fd);
        return NULL;
    }
    return blocking_ready(conn_new(fd, opt, true), opt, NULL, err, errsize);
}

struct resp_conn *resp_connect_nonblock(const struct resp_options *opt, char *err, size_t errsize)
{
    bool connected = false;
    int fd = open_socket(opt, &connected, err, errsize);

    if (fd < 0)
        return NULL;
    struct resp_conn *c = conn_new(fd, opt, false);
    if (opt->tls != NULL && !tls_begin(c, opt, err, errsize)) {
        resp_close(c);
        return NULL;
    }
    if (!connected)
        c->phase = PHASE_CONNECTING; /* advance() goes on from there */
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
    int rc = resp_reader_next(c->reader, reply, why, sizeof(why));

    if (rc < 0)
        fail_as(c, RESP_ERR_PROTOCOL, err, errsize, "%s", why);
    return rc;
}

/* Send one formatted command on a blocking connection and wait for its
 * reply, within the command timeout; the contract is resp_command()'s. */
static redisReply *run(struct resp_conn *c, const char *cmd, size_t len, char *err, size_t errsize)
{
    int64_t deadline = now_ms() + c->command_timeout_ms;
    redisReply *reply = NULL;
    short want = POLLOUT;
    ssize_t n;
    int rc;

    assert(c->blocking);
    out_append(c, cmd, len);
    while (c->out_pos < c->out_len) {
        n = put(c, c->out + c->out_pos, c->out_len - c->out_pos, &want, err, errsize);
        if (n < 0)
            return NULL;
        c->out_pos += (size_t)n;
        if (n == 0 && wait_fd(c->fd, want, deadline) <= 0) {
            fail_as(c, RESP_ERR_TIMEOUT, err, errsize, "no reply within %d ms",
                    c->command_timeout_ms);
            return NULL;
        }
    }
    while ((rc = take_reply(c, &reply, err, errsize)) == 0) {
        n = take(c, &want, err, errsize);
        if (n < 0)
            return NULL;
        if (n == 0 && wait_fd(c->fd, want, deadline) <= 0) {
            fail_as(c, RESP_ERR_TIMEOUT, err, errsize, "no reply within %d ms",
                    c->command_timeout_ms);
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
    va_list ap;

    va_start(ap, fmt);
    vfail_as(c, RESP_ERR_REPLY, err, errsize, fmt, ap);
    va_end(ap);
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
    return c != NULL ? c->fd : -1;
}

/* Queue an already formatted command; takes ownership of cmd. */
static bool append(struct resp_conn *c, char *cmd, int len, char *err, size_t errsize)
{
    (void)err;
    (void)errsize;
    out_append(c, cmd, (size_t)len);
    redisFreeCommand(cmd);
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
    switch (c->phase) {
    case PHASE_CONNECTING:
        return true;
    case PHASE_HANDSHAKE:
        return c->tls_wants == POLLOUT;
    default:
        return c->out_pos < c->out_len;
    }
}

short resp_poll_events(const struct resp_conn *c)
{
    if (c == NULL)
        return 0;
    switch (c->phase) {
    case PHASE_CONNECTING:
        return POLLOUT;
    case PHASE_HANDSHAKE:
        return c->tls_wants;
    default:
        return (short)(POLLIN | (c->out_pos < c->out_len ? POLLOUT : 0));
    }
}

/* Non-blocking: take c as far towards usable as it can go now: 1 usable,
 * 0 not yet, -1 failed (err). */
static int advance(struct resp_conn *c, char *err, size_t errsize)
{
    if (c->phase == PHASE_CONNECTING) {
        struct pollfd p = {.fd = c->fd, .events = POLLOUT};
        if (poll(&p, 1, 0) <= 0)
            return 0;
        int e = connect_error(c->fd);
        if (e != 0) {
            fail_as(c, RESP_ERR_IO, err, errsize, "%s", strerror(e));
            return -1;
        }
        c->phase = c->ssl != NULL ? PHASE_HANDSHAKE : PHASE_READY;
    }
    if (c->phase == PHASE_HANDSHAKE)
        return handshake_step(c, err, errsize);
    return 1;
}

int resp_flush(struct resp_conn *c, char *err, size_t errsize)
{
    short want = POLLOUT;
    int rc = advance(c, err, errsize);

    if (rc <= 0)
        return rc;
    while (c->out_pos < c->out_len) {
        ssize_t n = put(c, c->out + c->out_pos, c->out_len - c->out_pos, &want, err, errsize);
        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
        c->out_pos += (size_t)n;
    }
    return 1;
}

int resp_read(struct resp_conn *c, char *err, size_t errsize)
{
    short want = POLLIN;
    size_t total = 0;
    int rc = advance(c, err, errsize);

    if (rc <= 0)
        return rc;
    for (;;) {
        ssize_t n = take(c, &want, err, errsize);
        if (n < 0)
            return -1;
        total += (size_t)n;
        if (n == 0 || total >= READ_PER_CALL || (c->ssl == NULL && n < READ_CHUNK))
            return 0;
    }
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
