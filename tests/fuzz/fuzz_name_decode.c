/*
 * fuzz_name_decode.c - the {name} of /files/{name}: percent-decoding and path validation
 * (files_name_decode, files_name_is_reserved in server1/files). Properties of a name that is
 * accepted: it fits, holds no NUL, control character or backslash, is not absolute, and has no
 * empty, "." or ".." segment, so that opened beneath --root it cannot leave it; a name is
 * reserved (the upload store's .s1store) exactly when some segment starts with ".s1"; and
 * decoding is idempotent on names without '%' (what was accepted decodes to itself).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../server1/files.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_segments(const char *name, size_t len)
{
    size_t start = 0;
    bool reserved = false;

    if (len == 0 || name[0] == '/')
        abort();
    for (size_t i = 0; i <= len; i++) {
        if (i < len && name[i] != '/')
            continue;
        size_t sl = i - start;
        const char *seg = name + start;
        if (sl == 0 || (sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.'))
            abort(); /* an empty, "." or ".." segment was accepted */
        if (sl >= 3 && memcmp(seg, ".s1", 3) == 0)
            reserved = true;
        start = i + 1;
    }
    if (files_name_is_reserved(name, len) != reserved)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char out[FILES_NAME_MAX + 1], again[FILES_NAME_MAX + 1];
    size_t out_len = 0, again_len = 0;
    const char *why = NULL;

    if (files_name_decode((const char *)data, size, out, sizeof(out), &out_len, &why) != 0) {
        if (why == NULL)
            abort();
        return 0;
    }
    if (out_len > FILES_NAME_MAX || out[out_len] != '\0' || strlen(out) != out_len)
        abort();
    for (size_t i = 0; i < out_len; i++) {
        unsigned char c = (unsigned char)out[i];
        if (c < 0x20 || c == 0x7f || c == '\\')
            abort();
    }
    check_segments(out, out_len);
    if (memchr(out, '%', out_len) == NULL) {
        if (files_name_decode(out, out_len, again, sizeof(again), &again_len, &why) != 0 ||
            again_len != out_len || memcmp(again, out, out_len) != 0)
            abort();
    }
    return 0;
}
