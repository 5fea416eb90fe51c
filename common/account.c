/*
 * account.c - see account.h.
 */
#include "account.h"

#include <string.h>

bool account_username_valid(const char *user, size_t len)
{
    if (len < 1 || len > ACCOUNT_USER_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = user[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

bool account_password_valid(const char *pass, size_t len)
{
    return len >= 1 && len <= ACCOUNT_PASS_MAX && memchr(pass, '\0', len) == NULL;
}
