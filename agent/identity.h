/* identity.h -- the host id and agent credential cairnd handed out at
 * registration, kept in DATA_DIR/identity.json (mode 0600) so a restarted
 * agent carries on as the same host without registering again. */
#ifndef CAIRN_AGENT_IDENTITY_H
#define CAIRN_AGENT_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>

struct agent_identity {
    char host_id[64];
    char credential[128];
};

/* Load the identity saved under data_dir. Returns true when one was found
 * and is well-formed; false (with *id zeroed) when there is none, and
 * false with a message in err when the file exists but is unreadable or
 * malformed (err is "" when it is simply absent). */
bool agent_identity_load(const char *data_dir, struct agent_identity *id, char *err,
                         size_t errsize);

/* Save id under data_dir atomically, readable by the owner only. */
bool agent_identity_save(const char *data_dir, const struct agent_identity *id, char *err,
                         size_t errsize);

#endif
