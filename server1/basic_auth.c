/*
 * basic_auth.c - see basic_auth.h.
 */
#include "basic_auth.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

/* 0..63 for the alphabet, 64 for '=', 255 for anything else */
static uint8_t b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return (uint8_t)(c - 'A');
    if (c >= 'a' && c <= 'z')
        return (uint8_t)(c - 'a' + 26);
    if (c >= '0' && c <= '9')
        return (uint8_t)(c - '0' + 52);
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    if (c == '=')
        return 64;
    return 255;
}

ssize_t http_base64_decode(const char *in, size_t len, unsigned char *out, size_t cap)
{
    size_t o = 0;

    if (len % 4 != 0)
        return -1;
    for (size_t i = 0; i < len; i += 4) {
        uint8_t v[4];
        size_t pad = 0;
        bool last = i + 4 == len;

        for (size_t k = 0; k < 4; k++) {
            v[k] = b64_value((unsigned char)in[i + k]);
            if (v[k] == 255)
                return -1;
        }
        /* '=' only in the last quantum, only in its last two places, and only as a suffix */
        if (v[0] == 64 || v[1] == 64)
            return -1;
        if (v[2] == 64) {
            if (!last || v[3] != 64)
                return -1;
            pad = 2;
        } else if (v[3] == 64) {
            if (!last)
                return -1;
            pad = 1;
        }
        if (o + 3 - pad > cap)
            return -1;
        out[o++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
        if (pad == 2) {
            if (v[1] & 0x0f)
                return -1; /* non-canonical: unused bits set */
            break;
        }
        out[o++] = (unsigned char)((v[1] & 0x0f) << 4 | v[2] >> 2);
        if (pad == 1) {
            if (v[2] & 0x03)
                return -1;
            break;
        }
        out[o++] = (unsigned char)((v[2] & 0x03) << 6 | v[3]);
    }
    return (ssize_t)o;
}

int http_basic_parse(const char *value, size_t len, struct http_basic_cred *cred,
                     const char **why)
{
    unsigned char dec[ACCOUNT_USER_MAX + 1 + ACCOUNT_PASS_MAX];
    const unsigned char *colon;
    size_t i = 5;
    ssize_t n;

    if (len < 6 || strncasecmp(value, "Basic", 5) != 0 || value[5] != ' ') {
        *why = "not Basic authentication";
        return -1;
    }
    while (i < len && value[i] == ' ')
        i++;
    if (len - i > HTTP_BASIC_MAX_B64) {
        *why = "credentials too long";
        return -1;
    }
    n = http_base64_decode(value + i, len - i, dec, sizeof(dec));
    if (n < 0) {
        *why = "bad base64 in credentials";
        return -1;
    }
    colon = memchr(dec, ':', (size_t)n);
    if (colon == NULL) {
        *why = "no colon in credentials";
        return -1;
    }
    cred->user_len = (size_t)(colon - dec);
    cred->pass_len = (size_t)n - cred->user_len - 1;
    if (!account_username_valid((const char *)dec, cred->user_len)) {
        *why = "username breaks the account rules";
        goto err;
    }
    if (!account_password_valid((const char *)colon + 1, cred->pass_len)) {
        *why = "password breaks the account rules";
        goto err;
    }
    memcpy(cred->user, dec, cred->user_len);
    cred->user[cred->user_len] = '\0';
    memcpy(cred->pass, colon + 1, cred->pass_len);
    cred->pass[cred->pass_len] = '\0';
    explicit_bzero(dec, sizeof(dec));
    return 0;

err:
    explicit_bzero(dec, sizeof(dec));
    return -1;
}
