/* engine_config.h -- the configuration file of one engine process, rendered
 * from the node's desired spec.
 *
 * Pure: no files are read or written here. The caller (cairn-agent) writes
 * the text to the node's directory, readable only by the engine's user,
 * since it carries the password. Every value is validated, and every string
 * is quoted so that nothing in a spec can end a line or add a directive. */
#ifndef CAIRN_ENGINE_CONFIG_H
#define CAIRN_ENGINE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog.h"

/* Ranges of the managed settings below. */
#define ENGINE_CONFIG_NODE_TIMEOUT_MIN_MS 500
#define ENGINE_CONFIG_NODE_TIMEOUT_MAX_MS 120000
#define ENGINE_CONFIG_RESERVED_MAX        90

/* Limits on the spec's strings. */
#define ENGINE_CONFIG_ID_MAX       64 /* node_id, availability_zone */
#define ENGINE_CONFIG_PATH_MAX     1024
#define ENGINE_CONFIG_PASSWORD_MAX 1024

/* Cairn's own engine users. cairnd and the agents talk to an engine as
 * ENGINE_ADMIN_USER (every command); a replica authenticates to its primary
 * as ENGINE_REPLICATION_USER, which can do nothing but replicate. The
 * tenant is the default user -- the cluster's AUTH token -- with every
 * command but those that would reconfigure the node or take it away from
 * Cairn (ENGINE_TENANT_ACCESS; docs/security.md). */
#define ENGINE_ADMIN_USER       "cairn"
#define ENGINE_REPLICATION_USER "cairn-repl"
extern const char ENGINE_TENANT_ACCESS[];

/* One user parameter, as a parameter group holds it: the directive name
 * and its value as text ("timeout", "300"). */
struct engine_config_param {
    const char *name;
    const char *value;
};

/* How an allowlisted parameter's value is checked. */
enum engine_config_param_type {
    ENGINE_PARAM_INT,    /* decimal integer from min to max */
    ENGINE_PARAM_BOOL,   /* yes or no */
    ENGINE_PARAM_ENUM,   /* one of values */
    ENGINE_PARAM_EVENTS, /* any of ENGINE_CONFIG_EVENT_CLASSES, or empty */
};

/* Keyspace notification classes both engines know. */
#define ENGINE_CONFIG_EVENT_CLASSES "KEg$lshzxentmdA"

/* One entry of the allowlist of parameters users may set. */
struct engine_config_param_spec {
    const char *name; /* the directive */
    enum engine_config_param_type type;
    long long min, max;        /* ENGINE_PARAM_INT */
    const char *const *values; /* ENGINE_PARAM_ENUM: NULL-terminated */
};

/*
 * Managed settings: what Cairn sets on every engine it manages, which users
 * may change through a cluster's parameters. One table in engine_config.c
 * describes them -- engine_config_managed_at() walks it -- and everything
 * else reads it: engine_config_defaults(), the API's check of parameters
 * (cluster_spec.c), the desired node configs cairnd sends agents
 * (store_hosts.c fills each absent one with its default), and `cairnd
 * managed-settings`, which the tests compare the documents with. They are:
 *
 *   parameter                node config field         default       values
 *   maxmemory-policy         maxmemory_policy          volatile-lru  engine_config_policy_valid()
 *   reserved-memory-percent  reserved_memory_percent   25            0 to 90
 *   appendonly               appendonly                yes           yes or no
 *   cluster-node-timeout     cluster_node_timeout_ms   5000          500 to 120000 (ms);
 *                                                                    cluster mode only
 *
 * A change of maxmemory-policy applies at once (CONFIG SET); the others
 * shape memory, persistence or the cluster bus and wait for each node's
 * next restart.
 */
struct engine_config_managed {
    const char *param;                  /* as a cluster's parameters name it */
    const char *field;                  /* in the agent protocol's node config */
    enum engine_config_param_type type; /* ENGINE_PARAM_INT, _BOOL or _ENUM */
    long long min, max;                 /* ENGINE_PARAM_INT */
    const char *const *values;          /* ENGINE_PARAM_ENUM: NULL-terminated */
    const char *unit;                   /* ENGINE_PARAM_INT: "milliseconds", or NULL */
    const char *fallback;               /* the default, as a parameter's value */
    bool cluster_only;                  /* only for clusters in cluster mode */
    bool at_restart;                    /* a change waits for the node's restart */
};

/* The i-th managed setting (0-based), or NULL past the end. Static. */
const struct engine_config_managed *engine_config_managed_at(size_t i);

/* The managed setting a cluster's parameters call name, or NULL. */
const struct engine_config_managed *engine_config_managed_find(const char *name);

/* Check a parameter's value for managed setting m: an integer in decimal
 * (digits only, no sign or leading zero) within range, yes or no, or one of
 * the values. False with "must be ..." in msg otherwise. Pure. */
bool engine_config_managed_check(const struct engine_config_managed *m, const char *value,
                                 char *msg, size_t msgsize);

/* A tenant user (POST /v1/clusters/{id}/users): its name, one or two
 * passwords as SHA-256 in hex (the second NULL when there is one) and its
 * access string, which passed engine_access_check(). */
struct engine_tenant_user {
    const char *name;
    const char *password_hashes[2];
    const char *access;
};

/* Everything the file is made from. Strings are borrowed, not copied. */
struct engine_config_spec {
    enum engine_kind kind;
    const char *line;             /* catalog line, not older than engine_kind_first_line() */
    const char *node_id;          /* Cairn's node id: 1..64 of [A-Za-z0-9._-] */
    int port;                     /* 1..65535; at most 55535 with cluster mode (bus port + 10000) */
    const char *bind;             /* one IPv4 or IPv6 address */
    const char *data_dir;         /* absolute; the engine's working directory */
    const char *pidfile;          /* absolute, or NULL for none */
    const char *logfile;          /* absolute, or NULL for standard output */
    uint64_t memory_mib;          /* the node type's memory */
    int reserved_memory_percent;  /* 0..90: kept out of maxmemory */
    const char *maxmemory_policy; /* see engine_config_policy_valid() */
    bool appendonly;              /* AOF, fsync every second */
    bool cluster_enabled;
    int cluster_node_timeout_ms; /* 500..120000; checked always, used in cluster mode */
    const char *password;        /* the tenant's (default user); NULL or "": none (loopback only) */
    const char *previous_password; /* the tenant's too, while its AUTH token rotates; or NULL */
    /* Cairn's own users' passwords (ENGINE_ADMIN_USER, ENGINE_REPLICATION_USER);
     * NULL: a node rendered before they existed, whose one password is
     * everyone's (requirepass). */
    const char *admin_password;
    const char *replication_password;
    /* The tenant users of the cluster beside the default one, given to a
     * running engine by engine_users_apply() (never written to the file:
     * an engine must start even if a user's rules name a command it does
     * not have). */
    const struct engine_tenant_user *tenant_users;
    size_t n_tenant_users;
    /* Transit encryption: TLS only, on port, with this certificate, its key
     * and the authority peers' certificates are checked by (absolute paths;
     * all three or none). NULL: plain TCP. */
    const char *tls_cert_file;
    const char *tls_key_file;
    const char *tls_ca_file;
    const char *availability_zone; /* NULL: none; Valkey 8.0+ announces it */
    /* Cluster mode disabled: the primary this node replicates from when it
     * starts (NULL: it starts as a primary). Ignored in cluster mode, where
     * nodes.conf says whom a node follows. */
    const char *replicaof_host;
    int replicaof_port;
    const struct engine_config_param *params;
    size_t n_params;
};

/* Memory figures derived from a node's memory; see engine_config_sizes(). */
struct engine_config_sizes {
    uint64_t maxmemory;      /* bytes */
    uint64_t repl_backlog;   /* bytes: repl-backlog-size */
    uint64_t replica_buffer; /* bytes: client-output-buffer-limit replica hard limit */
};

/* Reset spec to the defaults: valkey 8.0, every managed setting's default,
 * cluster mode off, and nothing else set (the caller fills node_id, port,
 * bind, data_dir, memory_mib...). */
void engine_config_defaults(struct engine_config_spec *spec);

/* Compute maxmemory and the replication buffer sizes for a node of
 * memory_mib with reserved_percent (0..ENGINE_CONFIG_RESERVED_MAX) held back:
 *
 *   maxmemory      = memory * (100 - reserved) / 100
 *   repl_backlog   = maxmemory / 100, clamped to [16 MiB, 1 GiB]
 *   replica_buffer = (memory - maxmemory) / 2, clamped to [64 MiB, 16 GiB]
 *
 * engine_config.c explains why. Returns false when the arguments are out of
 * range or leave less than 16 MiB of maxmemory. Pure. */
bool engine_config_sizes(uint64_t memory_mib, int reserved_percent,
                         struct engine_config_sizes *out);

/* Whether policy is a maxmemory-policy both engines know. Pure. */
bool engine_config_policy_valid(const char *policy);

/* Check one user parameter for an engine line: the name must be on the
 * allowlist (or an alias of an entry on it), available on this engine and
 * line, and the value of the right form (integer in range, yes/no, one of
 * an enumeration, ...). On success *canonical (may be NULL) gets the
 * directive name to write (an alias gives its entry's name). Returns false
 * with a message naming the parameter otherwise. line must pass
 * engine_line_parse(). Pure; lets the API refuse a parameter at request
 * time with the words rendering would use. */
bool engine_config_param_check(enum engine_kind kind, const char *line, const char *name,
                               const char *value, const char **canonical, char *err,
                               size_t errsize);

/* The i-th entry of the allowlist (0-based), or NULL past its end: for
 * describing the allowed parameters to users and for tests that try each on
 * the real engines. Static; never freed. */
const struct engine_config_param_spec *engine_config_param_at(size_t i);

/* Whether name (or the entry it is an alias of) is on the allowlist and
 * available on this engine and line. Pure. */
bool engine_config_param_available(enum engine_kind kind, const char *line, const char *name);

/* Render the configuration file for spec. Returns a new string (free it),
 * or NULL with a message in err naming the field or parameter at fault.
 * Pure. */
char *engine_config_render(const struct engine_config_spec *spec, char *err, size_t errsize);

/*
 * Guarded settings: those of the rendered file that an engine lets anyone
 * holding Cairn's own password change live (CONFIG SET; a tenant cannot),
 * and that would change how the node serves, persists, replicates or whom
 * it lets in -- maxmemory and its policy, persistence, port, bind,
 * protected mode, replication's login and buffers, the cluster bus
 * timeout. The agent compares the engine's values with these every INFO
 * round and puts back what differs (EngineConfigRepaired). `dir` and
 * `dbfilename` need no guard: the engines refuse to change them live.
 * The parameters users set through the API are not guarded: cairnd
 * changes them live itself.
 */
#define ENGINE_GUARDED_MAX       16
#define ENGINE_GUARDED_VALUE_MAX 256
struct engine_setting {
    const char *name; /* static */
    char value[ENGINE_GUARDED_VALUE_MAX];
};

/* The names to CONFIG GET: every guarded setting of an engine logged in to
 * as ENGINE_ADMIN_USER, and ENGINE_GUARDED_CLUSTER_NAMES too in cluster
 * mode. Space-separated. */
#define ENGINE_GUARDED_NAMES                                                                       \
    "maxmemory maxmemory-policy appendonly appendfsync save port bind protected-mode"              \
    " repl-diskless-sync repl-diskless-sync-delay repl-backlog-size masteruser masterauth"         \
    " tls-port"
#define ENGINE_GUARDED_CLUSTER_NAMES "cluster-node-timeout"

/* The guarded settings of an engine rendered from spec (which has an
 * admin_password), with the values CONFIG GET gives for them, in the
 * order of the names above. Returns how many (0 with err when spec would
 * not render). Pure. */
size_t engine_config_guarded(const struct engine_config_spec *spec,
                             struct engine_setting out[ENGINE_GUARDED_MAX], char *err,
                             size_t errsize);

/* One of a node's engine users: its name, password (NULL or "": none), a
 * second password valid beside it (an AUTH token rotation; NULL: none) and
 * access rules (space-separated ACL rules). */
struct engine_user {
    const char *name;
    const char *password;
    const char *second_password;
    const char *access;
};
#define ENGINE_USERS         3
#define ENGINE_USER_RULE_LEN 65 /* "#" and SHA-256 in hex */

/* spec's users (it has an admin_password): Cairn's, replication's, then
 * the tenant's -- the order a live engine is given them in, the default
 * user last, since a connection logged in as it may lose the right to set
 * the others. Borrowed from spec. Pure. */
void engine_users_of(const struct engine_config_spec *spec, struct engine_user out[ENGINE_USERS]);

/* A password as an ACL rule: "#<its SHA-256 in hex>", so that neither the
 * file nor the command that sets it holds the password; "nopass" for none. */
void engine_user_password_rule(const char *password, char rule[ENGINE_USER_RULE_LEN + 1]);

#endif
