/* resp_tls.c -- engine/resp.c's TLS from the command line, for the system
 * tests and the handshake benchmark: certificates from lib/x509's
 * authority, a PING over a blocking or a non-blocking connection, and how
 * many connections a second an engine takes.
 *
 *     resp_tls issue DIR NAME...
 *         DIR/ca.pem and ca.key (an authority, made once), and DIR/server.pem
 *         and server.key for NAME... (addresses or DNS names)
 *     resp_tls ping HOST PORT [--ca FILE] [--nonblock] [--user U] [--password P]
 *         prints the reply to PING, or the error (exit 1)
 *     resp_tls rate HOST PORT SECONDS [--ca FILE]
 *         connects (handshake and PING included) and closes, again and again
 *         for SECONDS; prints "connections N seconds S per_second R"
 *
 * Exit 2 on bad arguments. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "resp.h"
#include "x509.h"
#include "xalloc.h"

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    char *text = xmalloc(1 << 20);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

static bool write_file(const char *dir, const char *name, const char *text)
{
    char *path = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    bool ok = f != NULL && fputs(text, f) >= 0;
    if (f != NULL)
        ok = fclose(f) == 0 && ok;
    chmod(path, 0644);
    free(path);
    return ok;
}

static int issue(const char *dir, const char *const *names, size_t n)
{
    char err[256], *ca_path = xasprintf("%s/ca.pem", dir), *key_path = xasprintf("%s/ca.key", dir);
    char *ca_pem = read_file(ca_path), *ca_key = read_file(key_path), *cert, *key;
    int rc = 1;

    if (ca_pem == NULL || ca_key == NULL) {
        free(ca_pem);
        free(ca_key);
        if (!x509_ca_create("Cairn test authority", 30, &ca_pem, &ca_key, err, sizeof(err)) ||
            !write_file(dir, "ca.pem", ca_pem) || !write_file(dir, "ca.key", ca_key)) {
            fprintf(stderr, "resp_tls: %s\n", err);
            goto out;
        }
    }
    struct x509_ca *ca = x509_ca_load(ca_pem, ca_key, err, sizeof(err));
    if (ca == NULL || !x509_issue(ca, names, n, 30, &cert, &key, err, sizeof(err))) {
        fprintf(stderr, "resp_tls: %s\n", err);
        x509_ca_free(ca);
        goto out;
    }
    rc = write_file(dir, "server.pem", cert) && write_file(dir, "server.key", key) ? 0 : 1;
    free(cert);
    free(key);
    x509_ca_free(ca);
out:
    free(ca_pem);
    free(ca_key);
    free(ca_path);
    free(key_path);
    return rc;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* PING over a non-blocking connection, driven by poll(), within 3 s. */
static redisReply *ping_nonblock(const struct resp_options *o, char *err, size_t errsize)
{
    struct resp_conn *c = resp_connect_nonblock(o, err, errsize);
    redisReply *r = NULL;
    int64_t deadline = now_us() + 3000000;

    if (c == NULL || !resp_append(c, err, errsize, "PING")) {
        resp_close(c);
        return NULL;
    }
    while (r == NULL && now_us() < deadline) {
        struct pollfd p = {.fd = resp_fd(c), .events = resp_poll_events(c)};
        if (poll(&p, 1, 100) < 0 && errno != EINTR)
            break;
        if ((p.revents & (POLLIN | POLLHUP | POLLERR)) && resp_read(c, err, errsize) < 0)
            break;
        if ((p.revents & POLLOUT) && resp_wants_write(c) && resp_flush(c, err, errsize) < 0)
            break;
        if (resp_next_reply(c, &r, err, errsize) < 0)
            break;
    }
    if (r == NULL && err[0] == '\0')
        snprintf(err, errsize, "no reply within 3 s");
    resp_close(c);
    return r;
}

static int ping(struct resp_options *o, bool nonblock)
{
    char err[512] = "";
    redisReply *r;

    if (nonblock) {
        r = ping_nonblock(o, err, sizeof(err));
    } else {
        struct resp_conn *c = resp_connect(o, err, sizeof(err));
        r = c != NULL ? resp_command(c, err, sizeof(err), "PING") : NULL;
        resp_close(c);
    }
    if (r == NULL) {
        printf("error: %s\n", err);
        return 1;
    }
    printf("%.*s\n", (int)r->len, r->str != NULL ? r->str : "");
    resp_reply_free(r);
    return 0;
}

static int rate(struct resp_options *o, double seconds)
{
    int64_t start = now_us(), end = start + (int64_t)(seconds * 1e6), t;
    long n = 0;
    char err[512];

    while ((t = now_us()) < end) {
        struct resp_conn *c = resp_connect(o, err, sizeof(err));
        redisReply *r = c != NULL ? resp_command(c, err, sizeof(err), "PING") : NULL;
        resp_close(c);
        if (r == NULL) {
            fprintf(stderr, "resp_tls: %s\n", err);
            return 1;
        }
        resp_reply_free(r);
        n++;
    }
    double took = (double)(t - start) / 1e6;
    printf("connections %ld seconds %.2f per_second %.0f\n", n, took, (double)n / took);
    return 0;
}

int main(int argc, char **argv)
{
    struct resp_options o = {.connect_timeout_ms = 3000, .command_timeout_ms = 3000};
    struct resp_tls *tls = NULL;
    bool nonblock = false;
    char err[256];
    int rc;

    if (argc >= 4 && strcmp(argv[1], "issue") == 0)
        return issue(argv[2], (const char *const *)argv + 3, (size_t)(argc - 3));
    if (argc < 4 || (strcmp(argv[1], "ping") != 0 && strcmp(argv[1], "rate") != 0))
        goto usage;
    o.host = argv[2];
    o.port = atoi(argv[3]);
    int first = strcmp(argv[1], "rate") == 0 ? 5 : 4;
    if (first > argc)
        goto usage;
    for (int i = first; i < argc; i++) {
        if (strcmp(argv[i], "--nonblock") == 0) {
            nonblock = true;
        } else if (i + 1 < argc && strcmp(argv[i], "--user") == 0) {
            o.username = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--password") == 0) {
            o.password = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--ca") == 0) {
            char *pem = read_file(argv[++i]);
            tls = pem != NULL ? resp_tls_new(pem, err, sizeof(err)) : NULL;
            free(pem);
            if (tls == NULL) {
                fprintf(stderr, "resp_tls: %s: %s\n", argv[i], pem != NULL ? err : "unreadable");
                return 2;
            }
            o.tls = tls;
        } else {
            goto usage;
        }
    }
    rc = first == 5 ? rate(&o, atof(argv[4])) : ping(&o, nonblock);
    resp_tls_free(tls);
    return rc;
usage:
    fprintf(stderr, "usage: resp_tls issue DIR NAME... | ping HOST PORT [--ca FILE] [--nonblock] "
                    "[--user U] [--password P] | rate HOST PORT SECONDS [--ca FILE]\n");
    return 2;
}
