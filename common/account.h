/*
 * account.h - the rules for usernames and passwords, shared by server1 (which rejects bad input
 * with 400 before asking server2) and server2 (which never trusts its peer). Pure functions.
 */
#ifndef ACCOUNT_H
#define ACCOUNT_H

#include <stdbool.h>
#include <stddef.h>

#define ACCOUNT_USER_MAX 64  /* bytes; usernames are 1..64 of [A-Za-z0-9._-] */
#define ACCOUNT_PASS_MAX 256 /* bytes; passwords are 1..256 arbitrary bytes except NUL */

bool account_username_valid(const char *user, size_t len);
bool account_password_valid(const char *pass, size_t len);

#endif /* ACCOUNT_H */
