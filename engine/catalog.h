/* catalog.h -- the engines Cairn runs (Redis, Valkey), their versions and
 * lines, and the engine binaries installed on this machine.
 *
 * The list of engines lives here and nowhere else: the API's checks, the
 * agent and the config renderer take it from engine_kind_names; the
 * database's CHECK constraints and the OpenAPI document are compared with
 * it by tests (`cairnd engines` prints it).
 *
 * A *version* is what a binary reports ("8.0.1"); a *line* is the catalog's
 * major.minor ("8.0") that users choose and upgrade paths connect. Which
 * lines exist and which upgrades are allowed lives in the database
 * (engine_versions, engine_upgrade_paths); this module only knows how to
 * name engines, read versions, and find binaries. */
#ifndef CAIRN_CATALOG_H
#define CAIRN_CATALOG_H

#include <stdbool.h>
#include <stddef.h>

enum engine_kind {
    ENGINE_REDIS,
    ENGINE_VALKEY,
};

#define ENGINE_KIND_COUNT 2

/* Sizes of the text buffers below, with their terminators. */
#define ENGINE_VERSION_MAX 32
#define ENGINE_LINE_MAX    16

/* How long engine_discover() lets one binary take to answer --version. */
#define ENGINE_PROBE_TIMEOUT_MS 5000

/* One installed engine binary. */
struct engine_binary {
    enum engine_kind kind;
    char version[ENGINE_VERSION_MAX]; /* what it reports: "8.0.1" */
    char line[ENGINE_LINE_MAX];       /* its catalog line: "8.0" */
    char *path;                       /* absolute, as found (not resolved); owned */
};

/* Every engine's name as the API and the database spell it ("redis",
 * "valkey"), indexed by enum engine_kind and ended by NULL: a jspec one_of
 * list. */
extern const char *const engine_kind_names[ENGINE_KIND_COUNT + 1];

/* The engine's name, engine_kind_names[kind]. Never NULL for a valid kind. */
const char *engine_kind_name(enum engine_kind kind);

/* Parse an engine name (exact, lower case). Returns false for anything
 * else, leaving *out untouched. */
bool engine_kind_from_name(const char *name, enum engine_kind *out);

/* Whether name (NULL is fine: no) is one of engine_kind_names. */
bool engine_kind_known(const char *name);

struct engine_info;

/* Which engine answered an INFO reply, by the version its server section
 * reports: valkey_version for Valkey (which also reports a redis_version,
 * for clients), redis_version for Redis. On success *kind and *version
 * (either may be NULL) get the engine and its version as reported
 * ("8.0.1", borrowed from info). False, the outputs untouched, when the
 * reply has neither. Pure. */
bool engine_kind_from_info(const struct engine_info *info, enum engine_kind *kind,
                           const char **version);

/* The server binary's conventional file name: "redis-server",
 * "valkey-server". */
const char *engine_kind_binary(enum engine_kind kind);

/* The oldest line of the engine that Cairn knows how to configure
 * ("7.0" for Redis, "7.2" for Valkey). */
const char *engine_kind_first_line(enum engine_kind kind);

/* Parse the first line of `<binary> --version`, e.g.
 *     Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=...
 *     Valkey server v=8.0.1 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=...
 * into the kind and the version ("7.0.15"; version must hold
 * ENGINE_VERSION_MAX bytes). The version must be MAJOR.MINOR.PATCH in
 * digits. Returns false, leaving the outputs untouched, for anything else,
 * including the output of the engines' other tools (redis-check-rdb). Pure. */
bool engine_parse_version(const char *text, enum engine_kind *kind, char *version);

/* The catalog line of a full version: "7.0.15" -> "7.0" (line must hold
 * ENGINE_LINE_MAX bytes). Returns false when version is not
 * MAJOR.MINOR.PATCH. Pure. */
bool engine_version_line(const char *version, char *line);

/* Whether text is a line, MAJOR.MINOR in digits without leading zeros
 * ("8.0", "10.12"); on success *major and *minor (either may be NULL) get
 * its numbers. Pure. */
bool engine_line_parse(const char *text, int *major, int *minor);

/* Order two valid lines: <0, 0 or >0 as a is older than, the same as, or
 * newer than b ("8.0" < "8.1" < "10.0"). Both must pass engine_line_parse(). */
int engine_line_compare(const char *a, const char *b);

/* Run `path --version` (no shell; stdin and stderr to /dev/null; stdout
 * captured) and describe the binary in *out, whose path becomes a copy of
 * path (free it with engine_binary_clear()). The binary itself decides the
 * kind: a file named redis-server that is really Valkey reports Valkey.
 *
 * path must be absolute, a regular file (after symlinks) and executable.
 * The process runs in its own process group with argv[0] = path (the
 * Debian packages make *-server a symlink to a multi-call binary that
 * chooses its mode by that name), and the whole group is killed when it
 * takes longer than timeout_ms. Returns false with a message in err, and
 * *out untouched, when the file is unusable, the process fails or times
 * out, or its output is not an engine's version line. */
bool engine_probe(const char *path, int timeout_ms, struct engine_binary *out, char *err,
                  size_t errsize);

/* Find the engine binaries on this machine: every file named redis-server
 * or valkey-server in the absolute directories of search_path (a $PATH-style
 * list; NULL means the PATH variable; empty and relative entries are skipped
 * so the current directory never counts), then each of the n_extra paths
 * the operator configured. Each is probed with timeout_ms.
 *
 * Binaries are de-duplicated by their resolved path (realpath), so a
 * symlink and its target count once; the entry keeps the first path found,
 * except that a later path named after the engine it turned out to be
 * (valkey-server for Valkey) replaces one that is not (a compatibility
 * symlink named redis-server).
 *
 * A name on the search path that fails its probe is logged and skipped: it
 * may be anything. An extra path that fails is an error (it was configured
 * on purpose; a typo must not go unnoticed): false, with a message naming it.
 * On success *out is a new array of *count entries (possibly none), freed
 * with engine_binaries_free(). */
bool engine_discover(const char *search_path, const char *const *extra, size_t n_extra,
                     int timeout_ms, struct engine_binary **out, size_t *count, char *err,
                     size_t errsize);

/* Free what an engine_binary owns and reset it. */
void engine_binary_clear(struct engine_binary *bin);

/* Free an array from engine_discover() (NULL is fine). */
void engine_binaries_free(struct engine_binary *bins, size_t count);

#endif
