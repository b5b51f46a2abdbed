/* fuzz_http_request.c -- the whole request path as cairnd sees it: raw
 * bytes on a TCP connection to cairnd's own HTTP server (libmicrohttpd,
 * the request checks, routing, authentication, body specs, the handlers
 * and their SQL on a real PostgreSQL), run in this process so that the
 * fuzzer sees what every byte reaches and the sanitizers watch every
 * thread.
 *
 * The database comes from CAIRN_FUZZ_DATABASE_URL (tests/fuzz/run starts a
 * private PostgreSQL); without it every authenticated route answers 503
 * and only the edge is exercised. Tokens cannot be guessed, so in the
 * input "{A}" stands for an admin token, "{R}" for a read token and "{B}"
 * for the agents' bootstrap token. The runner takes no operation kind:
 * accepted changes are queued, never run against engines. */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api.h"
#include "config.h"
#include "crypto.h"
#include "fuzz.h"
#include "http.h"
#include "migrate.h"
#include "monitor.h"
#include "runner.h"
#include "tokens.h"
#include "xalloc.h"

#define BOOTSTRAP "fuzz-bootstrap-token-0123456789"

static struct app app;
static struct http_server *server;
static int port;
static char *admin_token, *read_token;

static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    FUZZ_ASSERT(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    FUZZ_ASSERT(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

static char *new_token(enum token_scope scope)
{
    json_t *created = NULL;
    struct store_token_grant grant = {"fuzz", scope, scope == TOKEN_SCOPE_ADMIN, 0};
    FUZZ_ASSERT(tokens_create(app.db, NULL, &grant, &created) == DB_OK);
    char *text = xstrdup(json_string_value(json_object_get(created, "token")));
    json_decref(created);
    return text;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const struct op_kind *const no_kinds[] = {NULL};
    const char *url = getenv("CAIRN_FUZZ_DATABASE_URL");
    char err[512];
    (void)argc;
    (void)argv;

    FUZZ_ASSERT(config_from_env(&app.cfg, err, sizeof(err)));
    port = free_port();
    app.cfg.listen_port = port;
    app.cfg.http_threads = 2;
    app.cfg.db_pool_size = 4;
    app.cfg.sync_wait_ms = 0;
    app.cfg.agent_bootstrap_token = BOOTSTRAP;
    app.cfg.database_url = url != NULL ? url : "postgresql://fuzz@127.0.0.1:1/none";
    crypto_random(app.secret_key, sizeof(app.secret_key));
    app.have_secret_key = true;
    if (url != NULL) {
        int version = 0, applied = 0;
        PGconn *pg = db_connect(url, err, sizeof(err));
        FUZZ_ASSERT(pg != NULL && migrate_apply(pg, &version, &applied, err, sizeof(err)));
        PQfinish(pg);
    }
    app.db = db_pool_new(app.cfg.database_url, app.cfg.db_pool_size);
    admin_token = url != NULL ? new_token(TOKEN_SCOPE_ADMIN) : xstrdup("none");
    read_token = url != NULL ? new_token(TOKEN_SCOPE_READ) : xstrdup("none");
    server = http_start(&app, api_routes, api_route_count, err, sizeof(err));
    FUZZ_ASSERT(server != NULL);
    app.runner = runner_start(&app, no_kinds);
    app.monitor = monitor_new(&app, app.cfg.heartbeat_timeout_s);
    monitor_start(app.monitor);
    return 0;
}

/* The input with its token markers replaced. */
static char *expand(const uint8_t *data, size_t size, size_t *len)
{
    size_t cap = size + 1, o = 0;
    char *out = xmalloc(cap);

    for (size_t i = 0; i < size; i++) {
        const char *with = NULL;
        if (i + 2 < size && data[i] == '{' && data[i + 2] == '}') {
            with = data[i + 1] == 'A'   ? admin_token
                   : data[i + 1] == 'R' ? read_token
                   : data[i + 1] == 'B' ? BOOTSTRAP
                                        : NULL;
        }
        size_t n = with != NULL ? strlen(with) : 1;
        if (o + n >= cap) {
            cap = 2 * cap + n;
            out = xrealloc(out, cap);
        }
        if (with != NULL) {
            memcpy(out + o, with, n);
            i += 2;
        } else {
            out[o] = (char)data[i];
        }
        o += n;
    }
    *len = o;
    return out;
}

/* How long the server may stay silent before the exchange is over: a
 * request cut short is never answered, and libmicrohttpd does not notice
 * a client's half-close, so silence is the only end there is. Every
 * handler answers well within it; one that does not is left to finish
 * alone. */
#define QUIET_MS 20

/* Read from fd until the server closes it, one whole answer (head, then
 * Content-Length bytes of body) has arrived, or it stays quiet; true then.
 * False while more is to come. */
static bool answered(int fd)
{
    static char buf[1 << 16];
    static size_t have;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    ssize_t n = 0;

    if (poll(&p, 1, QUIET_MS) <= 0 || (n = recv(fd, buf + have, sizeof(buf) - 1 - have, 0)) <= 0) {
        have = 0;
        return true;
    }
    have += (size_t)n;
    buf[have] = '\0';
    const char *end = strstr(buf, "\r\n\r\n"), *length = strstr(buf, "Content-Length: ");
    size_t want = end != NULL && length != NULL && length < end
                      ? (size_t)(end + 4 - buf) + strtoul(length + 16, NULL, 10)
                      : sizeof(buf);
    if (have < want && have < sizeof(buf) - 1)
        return false;
    have = 0;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    size_t len;
    char *request = expand(data, size, &len);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    FUZZ_ASSERT(fd >= 0);
    FUZZ_ASSERT(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    for (size_t sent = 0; sent < len;) {
        ssize_t n = send(fd, request + sent, len - sent, MSG_NOSIGNAL);
        if (n <= 0)
            break;
        sent += (size_t)n;
    }
    while (!answered(fd))
        ;
    /* A reset, not a close: the server learns at once that the client is
     * gone, whatever state the request was left in. */
    struct linger reset = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    close(fd);
    free(request);
    return 0;
}
