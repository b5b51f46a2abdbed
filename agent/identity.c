/* identity.c -- the registration result, persisted in the data directory. */
#include "identity.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files.h"
#include "xalloc.h"

#define IDENTITY_FILE "identity.json"

bool agent_identity_load(const char *data_dir, struct agent_identity *id, char *err, size_t errsize)
{
    char *path = xasprintf("%s/%s", data_dir, IDENTITY_FILE);
    char *text = agent_files_read(path, 64 * 1024, NULL);
    json_t *j;
    const char *host, *cred;
    bool ok = false;

    memset(id, 0, sizeof(*id));
    err[0] = '\0';
    if (text == NULL) {
        if (errno != ENOENT)
            snprintf(err, errsize, "could not read \"%s\": %s", path, strerror(errno));
        free(path);
        return false;
    }
    j = json_loads(text, 0, NULL);
    host = json_string_value(json_object_get(j, "host_id"));
    cred = json_string_value(json_object_get(j, "credential"));
    if (host != NULL && cred != NULL && host[0] && cred[0] && strlen(host) < sizeof(id->host_id) &&
        strlen(cred) < sizeof(id->credential)) {
        strcpy(id->host_id, host);
        strcpy(id->credential, cred);
        ok = true;
    } else {
        snprintf(err, errsize, "\"%s\" is malformed; registering again", path);
    }
    json_decref(j);
    free(text);
    free(path);
    return ok;
}

bool agent_identity_save(const char *data_dir, const struct agent_identity *id, char *err,
                         size_t errsize)
{
    char *path = xasprintf("%s/%s", data_dir, IDENTITY_FILE);
    json_t *j = json_pack("{s:s, s:s}", "host_id", id->host_id, "credential", id->credential);
    char *text = json_dumps(j, JSON_INDENT(2));
    bool ok;

    if (text == NULL) {
        fprintf(stderr, "cairn: out of memory encoding the identity\n");
        abort();
    }
    ok = agent_files_write_atomic(path, text, strlen(text), 0600, err, errsize);
    free(text);
    json_decref(j);
    free(path);
    return ok;
}
