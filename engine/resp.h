/* resp.h -- a small RESP client, for cairnd's topology commands (blocking,
 * with timeouts) and the agent's poll loop (non-blocking), over plain TCP
 * or TLS (OpenSSL; the engines' tls-port). hiredis formats the commands and
 * parses the replies.
 *
 * Blocking use:
 *
 *     struct resp_options o = {.host = "127.0.0.1", .port = 7001, .password = pw};
 *     struct resp_conn *c = resp_connect(&o, err, sizeof(err));
 *     redisReply *r = resp_command(c, err, sizeof(err), "CLUSTER SHARDS");
 *
 * (The commands that shape a cluster have typed wrappers in topology.h.)
 *
 * Non-blocking use, one connection per engine in one poll() loop:
 *
 *     c = resp_connect_nonblock(&o, err, sizeof(err));   pollfd.fd = resp_fd(c)
 *     resp_append(c, err, sizeof(err), "PING");           queue; remember the time
 *     poll for POLLOUT while resp_wants_write(c)       -> resp_flush(c, ...)
 *     poll for POLLIN                                   -> resp_read(c, ...), then
 *     while (resp_next_reply(c, &r, ...) == 1) handle r in order of the appends;
 *     a command still in resp_pending(c) after 1 s means the engine is unresponsive.
 *
 * Errors, in both modes, are kinds (enum resp_error) plus a message in a
 * caller buffer naming the address ("127.0.0.1:7001: Connection refused").
 * After RESP_ERR_IO, RESP_ERR_TIMEOUT or RESP_ERR_PROTOCOL the connection is
 * out of step with the engine: close it and connect again. After
 * RESP_ERR_REPLY it stays usable.
 *
 * Replies are read under resp_engine_limits (see resp_reader.h): a reply
 * beyond them is RESP_ERR_PROTOCOL, so an engine that misbehaves cannot
 * make cairnd or an agent allocate what it declares.
 *
 * Also here: small pure helpers for reading reply trees (resp_reply_*),
 * shared by the ROLE and CLUSTER parsers. */
#ifndef CAIRN_ENGINE_RESP_H
#define CAIRN_ENGINE_RESP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "info.h"
#include "resp_reader.h"

/* What an engine's reply may be: far above the largest reply Cairn asks
 * for (COMMAND, CLUSTER SLOT-STATS over every slot), far below what would
 * hurt the process reading it. */
extern const struct resp_limits resp_engine_limits;

/* What a reply carrying data may be: one string as large as an engine
 * stores (512 MB), for DUMP of any key (a restore). */
extern const struct resp_limits resp_data_limits;

/* Connect and command timeout when an option is left at 0. */
#define RESP_DEFAULT_TIMEOUT_MS 1000

struct resp_options {
    const char *host; /* IP address or name (a name is resolved, blocking, on connect) */
    int port;
    int connect_timeout_ms;           /* resp_connect() only; <= 0: RESP_DEFAULT_TIMEOUT_MS */
    int command_timeout_ms;           /* resp_connect() only; <= 0: RESP_DEFAULT_TIMEOUT_MS */
    const char *username;             /* ACL user for AUTH username password; NULL: AUTH password */
    const char *password;             /* NULL: no AUTH */
    const struct resp_tls *tls;       /* TLS, checking the engine's certificate; NULL: plain TCP */
    const struct resp_limits *limits; /* its replies' bounds; NULL: resp_engine_limits */
};

/* What TLS connections check an engine's certificate by: the authorities
 * in ca_pem (PEM certificates), and the name (address or DNS name) the
 * connection is made to. TLS 1.2 at least. NULL with err when ca_pem holds
 * no certificate. Shared by any number of connections; free it after
 * them. */
struct resp_tls;
struct resp_tls *resp_tls_new(const char *ca_pem, char *err, size_t errsize);
void resp_tls_free(struct resp_tls *t);

enum resp_error {
    RESP_OK = 0,
    RESP_ERR_IO,       /* connect, read or write failed, or the engine closed the link */
    RESP_ERR_TIMEOUT,  /* no connection or reply within the timeout */
    RESP_ERR_PROTOCOL, /* the bytes read are not RESP, or break resp_engine_limits */
    RESP_ERR_REPLY,    /* the engine sent an error reply, or one of the wrong type */
    RESP_ERR_AUTH,     /* the engine answered, refusing our AUTH (a non-blocking connection) */
};

struct resp_conn;

/* Connect to opt->host:opt->port within connect_timeout_ms and, when
 * opt->password is set, authenticate (AUTH [username] password). Commands
 * then time out after command_timeout_ms. Returns a connection to release
 * with resp_close(), or NULL with the reason in err: "could not connect to
 * h:p: ..." or "could not authenticate to h:p: <engine error>". */
struct resp_conn *resp_connect(const struct resp_options *opt, char *err, size_t errsize);

/* resp_connect(), and on failure *refused says whether the engine answered
 * refusing the login (AUTH's error reply): the password, not the network. */
struct resp_conn *resp_connect_login(const struct resp_options *opt, bool *refused, char *err,
                                     size_t errsize);

/* resp_connect() on a socket already connected to an engine (one end of a
 * socketpair, in the unit tests): takes fd, which resp_close() closes (as
 * does a failure here). opt->host and opt->port only name it in messages;
 * connect_timeout_ms is not used. */
struct resp_conn *resp_connect_fd(int fd, const struct resp_options *opt, char *err,
                                  size_t errsize);

/* Start connecting without waiting (opt's timeouts are not used: the poll
 * loop keeps time). With opt->password, AUTH is queued at once; its reply is
 * consumed by resp_next_reply(), which fails if AUTH did. Returns NULL with
 * the reason in err only for failures known at once (bad address, no
 * socket); a refused connection shows up later as an error from
 * resp_flush() or resp_read(). */
struct resp_conn *resp_connect_nonblock(const struct resp_options *opt, char *err, size_t errsize);

/* Whether host is an IPv4 or IPv6 address: connecting to one resolves no
 * name, so resp_connect_nonblock() cannot block on it. Pure. */
bool resp_host_is_address(const char *host);

/* Close the connection and free it and any buffered data; NULL is allowed. */
void resp_close(struct resp_conn *c);

/* The kind of the last failure on c (RESP_OK after a success). */
enum resp_error resp_last_error(const struct resp_conn *c);

/* Blocking connections: run one command, hiredis format (%s for a C
 * string, %b for pointer + size_t length, and the printf integer
 * conversions). Returns the reply, which the caller frees with
 * resp_reply_free(), or NULL with err set:
 *   - the engine replied with an error: err holds the engine's text verbatim
 *     ("LOADING Redis is loading the dataset in memory"), so callers can test
 *     its first word; resp_last_error() is RESP_ERR_REPLY; c stays usable;
 *   - I/O failure, timeout or protocol error: err is "h:p: <reason>",
 *     resp_last_error() says which, and c must be closed. */
redisReply *resp_command(struct resp_conn *c, char *err, size_t errsize, const char *fmt, ...);

/* resp_command() with the arguments in a va_list. */
redisReply *resp_vcommand(struct resp_conn *c, char *err, size_t errsize, const char *fmt,
                          va_list ap);

/* For the wrappers of single commands (resp_ping() and those of
 * topology.h): the reply c just returned is no error, but not what its
 * command answers ("unexpected reply to PING"), or does not parse. Sets
 * resp_last_error() to RESP_ERR_REPLY (c stays usable) and err to "h:p: "
 * and the message fmt formats (printf); returns false. */
bool resp_fail_reply(struct resp_conn *c, char *err, size_t errsize, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* resp_command() with arguments given as argc strings of argvlen[i] bytes
 * each (argvlen NULL: all NUL-terminated). Same ownership and errors. */
redisReply *resp_command_argv(struct resp_conn *c, int argc, const char **argv,
                              const size_t *argvlen, char *err, size_t errsize);

/* PING; true when the engine answered PONG. On false, err and
 * resp_last_error() are as for resp_command() (a reply other than PONG is
 * RESP_ERR_REPLY). */
bool resp_ping(struct resp_conn *c, char *err, size_t errsize);

/* INFO with the given sections ("everything", "server replication"; NULL or
 * "" for the default set), parsed. Returns a struct to free with
 * engine_info_free(), or NULL with err set as for resp_command() (a reply
 * that is not a bulk string is RESP_ERR_REPLY). */
struct engine_info *resp_info(struct resp_conn *c, const char *sections, char *err, size_t errsize);

/* The socket, for poll(); -1 when c is NULL (not connected), which poll()
 * skips. */
int resp_fd(const struct resp_conn *c);

/* Non-blocking connections: queue a command (formats as for resp_command())
 * in the output buffer; nothing is sent until resp_flush(). Returns false
 * with err set when the format is invalid or c has already failed. */
bool resp_append(struct resp_conn *c, char *err, size_t errsize, const char *fmt, ...);

/* resp_append() in argv form (see resp_command_argv()). */
bool resp_append_argv(struct resp_conn *c, int argc, const char **argv, const size_t *argvlen,
                      char *err, size_t errsize);

/* True while queued bytes wait to be written: poll for POLLOUT. */
bool resp_wants_write(const struct resp_conn *c);

/* The events to poll() resp_fd(c) for: POLLIN, and POLLOUT while
 * resp_wants_write(c); 0 when c is NULL. */
short resp_poll_events(const struct resp_conn *c);

/* Write as much of the output buffer as the socket takes now. Returns 1
 * when it is empty, 0 when bytes remain (poll for POLLOUT and call again),
 * -1 on failure (RESP_ERR_IO; err set; close c). */
int resp_flush(struct resp_conn *c, char *err, size_t errsize);

/* Read what the socket has (call when poll() says POLLIN). Returns 0, or -1
 * with err set when the read failed or the engine closed the link
 * (RESP_ERR_IO; close c). */
int resp_read(struct resp_conn *c, char *err, size_t errsize);

/* Take the next complete reply read so far. Returns 1 with *reply set (the
 * caller frees it with resp_reply_free(); an engine error reply is returned
 * as a reply here, since it answers one particular command -- see
 * resp_reply_check()), 0 when no complete reply is buffered yet, -1 with err
 * set on a protocol error or when the AUTH queued by
 * resp_connect_nonblock() failed (close c). */
int resp_next_reply(struct resp_conn *c, redisReply **reply, char *err, size_t errsize);

/* Commands appended whose replies resp_next_reply() has not returned yet. */
size_t resp_pending(const struct resp_conn *c);

/* Free a reply from this module or from a redisReader; NULL is allowed. */
void resp_reply_free(redisReply *reply);

/* Pure. True when reply is not an error reply. Otherwise false, with the
 * engine's error text copied into err ("ERR unknown command 'FOO'..."). */
bool resp_reply_check(const redisReply *reply, char *err, size_t errsize);

/* Pure. True for a bulk or simple string (RESP3 verbatim strings too). */
bool resp_reply_is_string(const redisReply *reply);

/* Pure. An integer reply, or a string that is a whole decimal integer
 * (ROLE sends replica ports and offsets as strings), into *out. */
bool resp_reply_integer(const redisReply *reply, long long *out);

/* Pure. For a RESP3 map or a RESP2 array of alternating keys and values (as
 * CLUSTER SHARDS sends): the value of the first string key equal to key, or
 * NULL when absent or reply is not such a collection. */
const redisReply *resp_reply_map_get(const redisReply *reply, const char *key);

/* Pure. Whether reply can be read with resp_reply_map_get(): a map, or an
 * array with an even number of elements whose keys are all strings. */
bool resp_reply_is_map(const redisReply *reply);

#endif
