/*
 * route_files.h - GET/HEAD/PUT/DELETE /files/{name}. Under /files/ the rule is uniform: 401
 * unless the credentials are accepted (login.h), then 404 for anything that is not a servable
 * file - a missing one, a directory, a link out of the root, or a name that could never be
 * valid (traversal, NUL, ...). Names are checked before asking server2 and never reach the
 * filesystem when invalid. Names in the reserved namespace (FILES_RESERVED_PREFIX: upload temp
 * files) count as invalid. A GET or HEAD is answered from the one source source_resolve finds
 * (source.h), by answer_get, with the body source_body makes of it. An upload of an active type
 * (mimetypes_is_active: HTML, XML, script), or any file of one with --sandbox-root, is sent as
 * an attachment in a CSP sandbox (HDR_SANDBOX): it must not run as the site, whose Basic
 * credentials the reader's browser holds. PUT and DELETE follow the same rule, then go to the
 * committer (commit.h) with their preconditions (If-Match, If-None-Match, If-Unmodified-Since:
 * it judges them against the name's version when it makes the change), whose answer
 * (commit_done, through the thread's mailbox) completes the request. A PUT comes here with its
 * head only: its body is read once the credentials, the name and the quotas
 * (commit_quota_check) are accepted, and comes back in upload_received.
 *
 * DESIGN: on the conn's thread; what a request holds (its upload body, its place among the
 * committer's open uploads, its job) is in c->req (request.h) and let go by route_files_drop
 * when it is answered or the conn goes. A job's answer that finds the conn gone frees the job.
 */
#ifndef S1_ROUTE_FILES_H
#define S1_ROUTE_FILES_H

#include <stddef.h>

#include "conn.h"
#include "http_parser.h"

/* GET or HEAD /files/{name} (path, len: the target's path). */
enum s1_dispatch route_files_get(struct s1_conn *c, const char *buf,
                                 const struct http_request *req, const char *path, size_t len);
/* DELETE /files/{name}, or a PUT once its head is accepted (route_files_put_head). */
enum s1_dispatch route_files_change(struct s1_conn *c, const char *buf,
                                    const struct http_request *req, const char *path,
                                    size_t len);
/* A PUT's head, its body unread: 405/411/413 (closing), or server2 is asked (S1_HEAD_WAIT). */
enum s1_head route_files_put_head(struct s1_conn *c, const char *buf,
                                  const struct http_request *req, const char *path, size_t len);
/* Lets go of an upload's body and its place among the open uploads, if still held. */
void route_files_drop(struct s1_conn *c);

#endif /* S1_ROUTE_FILES_H */
