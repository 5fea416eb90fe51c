/*
 * fuzz_proxyproto.c - the PROXY protocol header (server1/proxyproto). Properties: the answer is
 * -1, 0 or a length within the input and PROXYPROTO_MAX; a header found is found again, with
 * the same client, in exactly its own bytes, and each of its proper prefixes asks for more; an
 * address is IPv4 or IPv6 of its own length; "read more" never comes for an input as long as
 * the longest header; the parser never reads past len (the input sits in an exact-size heap
 * buffer, so ASan sees an overrun).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include "../../server1/proxyproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct proxyproto_src a, b;
    uint8_t *buf = malloc(size ? size : 1);
    int r, r2;

    if (buf == NULL)
        return 0;
    memcpy(buf, data, size);
    r = proxyproto_parse(buf, size, &a);
    if (r < -1 || r > (int)size || r > PROXYPROTO_MAX)
        abort();
    if (r == 0 && size >= PROXYPROTO_MAX)
        abort();
    if (r > 0) {
        bool v4 = a.addr.ss_family == AF_INET && a.addr_len == sizeof(struct sockaddr_in);
        bool v6 = a.addr.ss_family == AF_INET6 && a.addr_len == sizeof(struct sockaddr_in6);
        if (!a.local && !v4 && !v6)
            abort();
        r2 = proxyproto_parse(buf, (size_t)r, &b);
        if (r2 != r || a.local != b.local || a.addr_len != b.addr_len ||
            (!a.local && memcmp(&a.addr, &b.addr, a.addr_len) != 0))
            abort();
        for (size_t cut = 0; cut < (size_t)r; cut += 1 + (size_t)r / 16)
            if (proxyproto_parse(buf, cut, &b) != 0)
                abort();
    }
    free(buf);
    return 0;
}
