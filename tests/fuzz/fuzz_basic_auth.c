/*
 * fuzz_basic_auth.c - HTTP Basic credentials (server1/basic_auth): the Authorization value and
 * the strict base64 decoder. Properties: what is accepted satisfies the account rules and its
 * lengths; the decoder is strict, so a base64 text it accepts is the one canonical encoding of
 * what it decoded (re-encoding gives the input back); the decoder never writes past cap.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/account.h"
#include "../../server1/basic_auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t b64_encode(const unsigned char *in, size_t n, char *out)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;

    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = tab[v >> 18 & 63];
        out[o++] = tab[v >> 12 & 63];
        out[o++] = i + 1 < n ? tab[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? tab[v & 63] : '=';
    }
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct http_basic_cred cred;
    const char *why = NULL;
    unsigned char dec[HTTP_BASIC_MAX_B64];
    char enc[HTTP_BASIC_MAX_B64 + 4];
    size_t cap;
    ssize_t n;

    if (http_basic_parse((const char *)data, size, &cred, &why) == 0) {
        if (!account_username_valid(cred.user, cred.user_len) ||
            !account_password_valid(cred.pass, cred.pass_len) ||
            strlen(cred.user) != cred.user_len || cred.pass[cred.pass_len] != '\0')
            abort();
    } else if (why == NULL) {
        abort();
    }

    /* the decoder alone, with a cap taken from the first byte */
    if (size < 1)
        return 0;
    cap = data[0] % sizeof(dec);
    n = http_base64_decode((const char *)data + 1, size - 1, dec, cap);
    if (n < 0)
        return 0;
    if ((size_t)n > cap)
        abort();
    if (b64_encode(dec, (size_t)n, enc) != size - 1 || memcmp(enc, data + 1, size - 1) != 0)
        abort(); /* accepted a non-canonical encoding */
    return 0;
}
