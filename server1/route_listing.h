/*
 * route_listing.h - GET/HEAD /files/ and /files/{dir}/: the directory's listing (listing.h)
 * once the credentials are accepted (login.h), JSON or HTML by the Accept field, from the
 * cursor ?after= on, at most --max-list entries; 404 for no such directory, 429 over
 * --list-limit. The HTML listing has a CSP without script (HDR_LISTING_CSP).
 *
 * DESIGN: on the conn's thread; the directory's name, the cursor and the format wanted are
 * kept in c->req (request.h) while server2 checks the credentials.
 */
#ifndef S1_ROUTE_LISTING_H
#define S1_ROUTE_LISTING_H

#include <stddef.h>

#include "conn.h"
#include "http_parser.h"

/* GET or HEAD of a path under /files/ that ends in '/' (path, len: the target's path). */
enum s1_dispatch route_listing_get(struct s1_conn *c, const char *buf,
                                   const struct http_request *req, const char *path,
                                   size_t len);

#endif /* S1_ROUTE_LISTING_H */
