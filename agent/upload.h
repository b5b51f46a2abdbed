/* upload.h -- snapshot files carried to cairnd. When cairnd's desired set
 * lists an upload -- a shard's data, which an engine on this host has just
 * saved -- the agent sends that node's saved RDB file (data/dump.rdb) in
 * parts: each part is gzip members of about UPLOAD_PART_BYTES, sent with
 * the number of bytes they expand to and those bytes' SHA-256, so cairnd
 * checks every part as it arrives; then the whole file's size and SHA-256
 * (docs/agent-protocol.md). Each upload runs on a thread of its own, with
 * a blocking libcurl handle, so the loop's failure detection never waits
 * on it; a part that fails is sent again. The threads are detached: an
 * agent that stops mid-way leaves the upload, and when it starts again
 * sends the file anew, from part 1. */
#ifndef CAIRN_AGENT_UPLOAD_H
#define CAIRN_AGENT_UPLOAD_H

#include "agent.h"

/* Compressed bytes a part holds, at least (but the last): above S3's 5 MiB
 * for parts of a multipart upload; the raw bytes read at a time. */
#define UPLOAD_PART_BYTES (6u << 20)
#define UPLOAD_READ_BYTES (4u << 20)

/* Start the uploads the desired set lists that this process has not taken
 * on yet. */
void agent_uploads_apply(struct agent *a);

#endif
