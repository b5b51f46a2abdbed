/* ec.h -- the ElastiCache-compatible endpoint: `POST /` on cairnd's own
 * address, speaking the AWS Query protocol (form-encoded requests signed
 * with Signature Version 4, XML answers), so that Terraform's AWS provider,
 * aws-cli and boto3 manage Cairn's clusters by changing their endpoint.
 *
 * A replication group is a Cairn cluster: each action is translated onto
 * the same cluster services, change table and operations as the REST API
 * (clusters.h, changes.h) and answered from the same documents, so the two
 * interfaces never disagree. See docs/elasticache.md for the mapping. */
#ifndef CAIRN_EC_H
#define CAIRN_EC_H

#include "http.h"

/* The route handler of POST /: authenticate, parse, run the action, reply
 * in XML (errors too, with ElastiCache's fault codes). */
void ec_serve(struct http_request *req);

#endif
