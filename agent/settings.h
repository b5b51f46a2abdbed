/* settings.h -- cairn-agent's settings from flags, the environment and a
 * config file.
 *
 * Every setting has one name used three ways: `--control-plane URL` on the
 * command line, CAIRN_AGENT_CONTROL_PLANE in the environment, and
 * `control-plane = URL` in the config file. Each source fills a layer; the
 * layers are then resolved with the precedence flag > environment > file >
 * default, and the result is validated against the agent protocol's
 * limits. `engine-path` may be given several times (in the environment as
 * a colon-separated list); the list of the highest layer that has one wins.
 */
#ifndef CAIRN_AGENT_SETTINGS_H
#define CAIRN_AGENT_SETTINGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include "log.h"
#include "usage.h"

/* The most cairnd URLs --control-plane takes. */
#define AGENT_CP_MAX_URLS 16

#define AGENT_MAX_ENGINE_PATHS 16

enum agent_setting_id {
    AGENT_SET_CONTROL_PLANE,
    AGENT_SET_CONTROL_PLANE_CA,
    AGENT_SET_BOOTSTRAP_TOKEN,
    AGENT_SET_JOIN_TOKEN,
    AGENT_SET_AZ,
    AGENT_SET_DATA_DIR,
    AGENT_SET_PORTS,
    AGENT_SET_ADDRESS,
    AGENT_SET_VCPUS,
    AGENT_SET_MEMORY_MIB,
    AGENT_SET_NAME,
    AGENT_SET_LOG_LEVEL,
    AGENT_SET_METRICS_INTERVAL,
    AGENT_SET_METRICS_PERIOD,
    AGENT_SET_ENGINE_USER,
    AGENT_SET_ENGINE_PATH, /* repeatable; kept in engine_paths, not value */
    AGENT_SET_COUNT,
};

/* One source's settings, as text. Strings are owned by the layer. */
struct agent_settings_layer {
    char *value[AGENT_SET_COUNT];
    char *engine_paths[AGENT_MAX_ENGINE_PATHS];
    size_t n_engine_paths;
};

/* What the machine offers when the settings do not say. */
struct agent_machine {
    char hostname[64]; /* short host name, already a valid agent name, or "" */
    int vcpus;         /* online processors, >= 1 */
    long memory_mib;   /* MemTotal of /proc/meminfo */
};

/* The resolved, validated settings. Strings are owned by the struct. */
struct agent_settings {
    char *control_plane;    /* http:// or https:// base URL, no trailing '/'; or several,
                               comma-separated (cp.h) */
    char *control_plane_ca; /* PEM file of the authority cairnd's HTTPS certificate is
                               checked against; NULL: the system's */
    char *bootstrap_token;
    char *join_token; /* one registration of this host's name, made by an admin */
    char *az;
    char *data_dir;
    char *address;
    char *name;
    char *engine_user; /* NULL: cairn-engine for an agent running as root, else its own */
    int port_min, port_max;
    int vcpus;
    long memory_mib;
    enum log_level log_level;
    int metrics_interval_s; /* 1..3600 */
    int metrics_period_s;   /* 1..3600, a multiple of the interval */
    char *engine_paths[AGENT_MAX_ENGINE_PATHS];
    size_t n_engine_paths;
};

/* Set key (a flag name without dashes, e.g. "data-dir") to value in layer,
 * appending for engine-path. Returns false with a message naming origin
 * (e.g. "--data-dir" or "agent.conf:3") for an unknown key or too many
 * engine paths. */
bool agent_settings_set(struct agent_settings_layer *layer, const char *key, const char *value,
                        const char *origin, char *err, size_t errsize);

/* Fill layer from the CAIRN_AGENT_* variables that are set and non-empty. */
bool agent_settings_from_env(struct agent_settings_layer *layer, char *err, size_t errsize);

/* Fill layer from config file text: `key = value` lines, blank lines and
 * lines starting with '#' ignored, whitespace around key and value trimmed.
 * name is used in messages ("FILE:LINE: ..."). Pure. */
bool agent_settings_from_text(struct agent_settings_layer *layer, const char *text,
                              const char *name, char *err, size_t errsize);

/* Read the file at path into layer (see agent_settings_from_text). */
bool agent_settings_from_file(struct agent_settings_layer *layer, const char *path, char *err,
                              size_t errsize);

/* Resolve layers (highest precedence first) over the machine defaults into
 * out and validate every value. On failure out is left empty (freed) and
 * err names the setting. Pure. */
bool agent_settings_resolve(struct agent_settings *out, const struct agent_settings_layer *layers,
                            size_t n_layers, const struct agent_machine *machine, char *err,
                            size_t errsize);

/* Parse "A-B" (1024 <= A <= B <= 65535). Pure. */
bool agent_settings_parse_ports(const char *text, int *min, int *max);

/* Read the processor count, memory and host name of this machine. */
void agent_settings_machine(struct agent_machine *machine);

/* Free what a layer or a settings struct owns; both may be zeroed again. */
void agent_settings_layer_free(struct agent_settings_layer *layer);
void agent_settings_free(struct agent_settings *settings);

/* The flag name of a setting ("control-plane"). */
const char *agent_settings_name(enum agent_setting_id id);

/* getopt_long() options for every setting's flag (each reported as 0, to
 * be passed to agent_settings_set() by its name), then the n of extra
 * (flags that are not settings), then the zero entry that ends them. Free
 * with free(). */
struct option *agent_settings_options(const struct option *extra, size_t n);

/* What of the settings a usage line lists. */
enum agent_settings_usage {
    AGENT_USAGE_FLAGS,     /* "--control-plane URL" or "[--address IP]" */
    AGENT_USAGE_VARIABLES, /* "CAIRN_AGENT_CONTROL_PLANE," ... each with a comma */
    AGENT_USAGE_DEFAULTS,  /* "address 127.0.0.1," ... those the table has, each with a comma */
};

/* Append the settings' flags, variables or defaults to a usage line, in
 * the order of enum agent_setting_id. */
void agent_settings_usage(struct usage *u, enum agent_settings_usage what);

#endif
