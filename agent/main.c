/* main.c -- cairn-agent's command line: read the settings, find the engine
 * binaries, take the data directory, re-adopt running engines, and run the
 * loop until SIGTERM or SIGINT.
 *
 * Stopping the agent never stops the engines: they keep serving, and the
 * next agent started on the same data directory re-adopts them without a
 * restart. To stop the engines, have cairnd set run=false (or delete the
 * nodes) before stopping the agent. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "collect.h"
#include "cp.h"
#include "desired.h"
#include "files.h"
#include "identity.h"
#include "log.h"
#include "loop.h"
#include "settings.h"
#include "supervise.h"
#include "telemetry.h"
#include "timeutil.h"
#include "usage.h"
#include "xalloc.h"

/* The usage message; the settings' part comes from settings.c's table. */
static void print_usage(FILE *out)
{
    struct usage u;

    usage_start(&u, out, "usage: cairn-agent", strlen("usage: cairn-agent "));
    agent_settings_usage(&u, AGENT_USAGE_FLAGS);
    usage_word(&u, "[--config FILE]");
    usage_end(&u);
    fputs("       cairn-agent --version\n", out);
    usage_start(&u, out, "Every setting may also come from the environment:", 0);
    agent_settings_usage(&u, AGENT_USAGE_VARIABLES);
    usage_text(&u, "or from the config file (--config or CAIRN_AGENT_CONFIG; `key = value` lines "
                   "with the flag names). Precedence: flag, environment, file, default. Defaults:");
    agent_settings_usage(&u, AGENT_USAGE_DEFAULTS);
    usage_text(&u, "name the host name, vcpus and memory-mib the machine's; metrics-period is a "
                   "multiple of metrics-interval. The bootstrap token is needed only until the "
                   "agent has registered: the credential is then kept in DIR/identity.json.");
    usage_end(&u);
    fputs("SIGTERM/SIGINT stop the agent but leave the engines running; a new agent on the same\n"
          "data directory re-adopts them. SIGHUP makes it look for engine binaries again.\n",
          out);
}

static int fail(const char *msg)
{
    fprintf(stderr, "cairn-agent: %s\n", msg);
    return 2;
}

/* Read the settings from the three sources into *out. */
static int read_settings(int argc, char **argv, struct agent_settings *out)
{
    /* Besides the settings: the config file, --version and --help. */
    static const struct option own[] = {
        {"config", required_argument, NULL, 'c'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
    };
    struct option *options = agent_settings_options(own, sizeof(own) / sizeof(own[0]));
    struct agent_settings_layer layers[3] = {{{0}}}; /* flags, environment, file */
    struct agent_machine machine;
    const char *config = getenv("CAIRN_AGENT_CONFIG");
    char err[512], origin[80];
    int idx, c, rc = 0;

    while ((c = getopt_long(argc, argv, "h", options, &idx)) != -1) {
        switch (c) {
        case 0:
            snprintf(origin, sizeof(origin), "--%s", options[idx].name);
            if (!agent_settings_set(&layers[0], options[idx].name, optarg, origin, err,
                                    sizeof(err)))
                rc = fail(err);
            break;
        case 'c':
            config = optarg;
            break;
        case 'V':
            printf("cairn-agent %s\n", AGENT_VERSION);
            rc = -1;
            break;
        case 'h':
            print_usage(stdout);
            rc = -1;
            break;
        default:
            print_usage(stderr);
            rc = 2;
            break;
        }
        if (rc != 0)
            goto out;
    }
    if (optind < argc) {
        print_usage(stderr);
        rc = 2;
        goto out;
    }
    if (!agent_settings_from_env(&layers[1], err, sizeof(err)) ||
        (config != NULL && config[0] != '\0' &&
         !agent_settings_from_file(&layers[2], config, err, sizeof(err)))) {
        rc = fail(err);
        goto out;
    }
    agent_settings_machine(&machine);
    if (!agent_settings_resolve(out, layers, 3, &machine, err, sizeof(err)))
        rc = fail(err);
out:
    free(options);
    for (int i = 0; i < 3; i++)
        agent_settings_layer_free(&layers[i]);
    return rc;
}

/* Who the engines run as. An agent running as root starts them as an
 * unprivileged user (--engine-user, cairn-engine by default), never as
 * root: a compromised engine then owns its data directory and nothing
 * else. An agent running as anyone else starts them as itself. */
static bool resolve_engine_user(const struct agent_settings *cfg, struct agent_proc_user *out,
                                char *err, size_t errsize)
{
    const char *name = cfg->engine_user != NULL ? cfg->engine_user : AGENT_ENGINE_USER;
    struct passwd *pw = getpwnam(name);

    memset(out, 0, sizeof(*out));
    if (geteuid() != 0) {
        if (cfg->engine_user != NULL && (pw == NULL || pw->pw_uid != geteuid())) {
            snprintf(err, errsize,
                     "--engine-user %s: only an agent running as root can start engines as "
                     "another user",
                     name);
            return false;
        }
        return true;
    }
    if (pw == NULL) {
        snprintf(err, errsize,
                 "engines are not run as root, and user %s does not exist: create it "
                 "(useradd --system --no-create-home --shell /usr/sbin/nologin %s) or name "
                 "another with --engine-user",
                 name, name);
        return false;
    }
    if (pw->pw_uid == 0) {
        snprintf(err, errsize, "--engine-user %s is root; engines are not run as root", name);
        return false;
    }
    out->switch_user = true;
    out->uid = pw->pw_uid;
    out->gid = pw->pw_gid;
    return true;
}

/* Create the data directory, make its path absolute (engines and pidfile
 * checks need it so), and lock it: two agents on one directory would fight
 * over the same engines. Returns the lock descriptor, kept open for life. */
static int take_data_dir(struct agent_settings *cfg, char *err, size_t errsize)
{
    char real[PATH_MAX];
    char *nodes = xasprintf("%s/nodes", cfg->data_dir);
    char *lock = NULL;
    int fd = -1;

    /* 0711: the engine user may pass through to its node's directory, and
     * list nothing. */
    if (!agent_files_mkdirs(nodes, 0711, err, errsize))
        goto out;
    if (chmod(cfg->data_dir, 0711) != 0 || chmod(nodes, 0711) != 0) {
        snprintf(err, errsize, "could not open \"%s\" to engines: %s", nodes, strerror(errno));
        goto out;
    }
    if (realpath(cfg->data_dir, real) == NULL) {
        snprintf(err, errsize, "could not resolve \"%s\": %s", cfg->data_dir, strerror(errno));
        goto out;
    }
    free(cfg->data_dir);
    cfg->data_dir = xstrdup(real);
    lock = xasprintf("%s/agent.lock", cfg->data_dir);
    fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errsize, "could not open \"%s\": %s", lock, strerror(errno));
    } else if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(err, errsize, "another cairn-agent is using \"%s\"", cfg->data_dir);
        close(fd);
        fd = -1;
    }
out:
    free(nodes);
    free(lock);
    return fd;
}

/* Read the desired set saved by an earlier run, if any. Its generation is
 * not reported: the first sync asks cairnd for the whole current set. */
static void load_desired(struct agent *a)
{
    char *path = xasprintf("%s/desired.json", a->cfg->data_dir);
    char *text = agent_files_read(path, AGENT_CP_MAX_ANSWER, NULL);
    json_t *j = text != NULL ? json_loads(text, 0, NULL) : NULL;
    char err[256];

    if (j != NULL && agent_desired_parse(j, &a->desired, err, sizeof(err))) {
        a->have_desired = true;
        a->heartbeat_timeout_s = a->desired.heartbeat_timeout_s;
        log_info("supervising by the saved desired set until cairnd answers",
                 "generation=%lld nodes=%zu", (long long)a->desired.generation, a->desired.n_nodes);
    } else if (text != NULL) {
        log_warn("ignoring the saved desired set", "path=\"%s\"", path);
    }
    json_decref(j);
    free(text);
    free(path);
}

int main(int argc, char **argv)
{
    struct agent_settings cfg;
    struct agent a;
    char err[512];
    int rc, lock = -1;

    rc = read_settings(argc, argv, &cfg);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    log_set_level(cfg.log_level);
    memset(&a, 0, sizeof(a));
    a.cfg = &cfg;
    a.sigfd = -1;
    a.sync_wait_ms = AGENT_SYNC_WAIT_MS;
    if (!resolve_engine_user(&cfg, &a.engine_user, err, sizeof(err))) {
        rc = fail(err);
        goto out;
    }
    lock = take_data_dir(&cfg, err, sizeof(err));
    if (lock < 0) {
        rc = fail(err);
        goto out;
    }
    /* Signals first: no engine may exit unnoticed, not even a probed one. */
    a.sigfd = agent_loop_signalfd();
    if (a.sigfd < 0) {
        snprintf(err, sizeof(err), "could not set up signals: %s", strerror(errno));
        rc = fail(err);
        goto out;
    }
    if (!agent_sup_find_engines(&a, err, sizeof(err))) {
        rc = fail(err);
        goto out;
    }
    a.have_id = agent_identity_load(cfg.data_dir, &a.id, err, sizeof(err));
    if (!a.have_id && err[0] != '\0')
        log_warn("identity unusable", "error=\"%s\"", err);
    if (!a.have_id && cfg.bootstrap_token == NULL && cfg.join_token == NULL) {
        rc = fail("not registered yet and no --join-token or --bootstrap-token given");
        goto out;
    }
    log_info("cairn-agent starting",
             "version=%s name=%s az=%s data_dir=\"%s\" control_plane=%s "
             "host_id=%s metrics_interval_s=%d metrics_period_s=%d",
             AGENT_VERSION, cfg.name, cfg.az, cfg.data_dir, cfg.control_plane,
             a.have_id ? a.id.host_id : "none", cfg.metrics_interval_s, cfg.metrics_period_s);
    if (!agent_collect_catalog_fits()) {
        rc = fail("the metric catalog has more metrics than the agent can hold");
        goto out;
    }
    a.multi = agent_cp_multi_init(cfg.control_plane);
    agent_cp_init(&a.cp, a.multi, cfg.control_plane, cfg.control_plane_ca, AGENT_CP_PLAIN);
    agent_telemetry_init(&a, a.multi);
    load_desired(&a);
    agent_sup_discover(&a, time_mono_us());
    if (a.have_desired)
        agent_sup_apply(&a, time_mono_us());
    rc = agent_loop_run(&a);
    agent_telemetry_close(&a);
    agent_cp_close(&a.cp);
    agent_cp_multi_cleanup(a.multi);
    log_info("cairn-agent stopped; engines left running", "nodes=%zu", a.n_nodes);
out:
    agent_sup_release(&a);
    agent_desired_free(&a.desired);
    if (a.sigfd >= 0)
        close(a.sigfd);
    if (lock >= 0)
        close(lock);
    agent_settings_free(&cfg);
    return rc;
}
