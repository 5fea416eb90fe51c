/*
 * basic_auth.h - HTTP Basic credentials (RFC 7617): the Authorization header value
 * "Basic <base64(user:password)>" parsed with a strict base64 decoder (standard alphabet,
 * padding required, no whitespace, unused bits must be zero). The decoded username and password
 * must satisfy the account rules (common/account.h). Pure functions, thread-safe.
 */
#ifndef BASIC_AUTH_H
#define BASIC_AUTH_H

#include <stddef.h>
#include <sys/types.h>

#include "account.h"

/* Longest base64 text that can hold "user:password" within the account limits. */
#define HTTP_BASIC_MAX_B64 (((ACCOUNT_USER_MAX + 1 + ACCOUNT_PASS_MAX) + 2) / 3 * 4)

struct http_basic_cred {
    char user[ACCOUNT_USER_MAX + 1]; /* NUL-terminated */
    size_t user_len;
    char pass[ACCOUNT_PASS_MAX + 1]; /* NUL-terminated; never log it */
    size_t pass_len;
};

/*
 * Strict base64 decode of in[0..len) into out (cap bytes). Returns the decoded length, or -1 on
 * a bad character, bad padding, non-zero unused bits, or an output longer than cap.
 */
ssize_t http_base64_decode(const char *in, size_t len, unsigned char *out, size_t cap);

/*
 * Parses an Authorization header value (leading/trailing whitespace already removed).
 * Returns 0 and fills *cred, or -1 with a static reason in *why (never containing secrets).
 */
int http_basic_parse(const char *value, size_t len, struct http_basic_cred *cred,
                     const char **why);

#endif /* BASIC_AUTH_H */
