/*
 * fuzz_frame.c - the server1 <-> server2 frame decoder (common/frame), which both sides run on
 * bytes from the other: server2 on requests (HELLO, AUTH, CREATE, VERIFY, PING), server1 on
 * answers (HELLO_ACK, REPLY). The input is a stream of frames decoded one after another.
 * Properties: a frame is decoded only whole (every shorter prefix of it is "more"), it takes
 * exactly its header and payload, its lengths are within the protocol's limits with NUL-
 * terminated copies (the character rules are server2's to judge: INVALID), encoding the decoded frame gives back exactly the bytes it came from (the
 * decoder accepts one spelling of each frame), and a refusal always has a reason.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct frame f, g;
    uint8_t enc[FRAME_MAX_SIZE];
    size_t off = 0;

    for (int frames = 0; off < size && frames < 64; frames++) {
        const char *why = NULL;
        size_t used = 0, n;
        enum frame_result r = frame_decode(data + off, size - off, &f, &used, &why);

        if (r == FRAME_BAD) {
            if (why == NULL)
                abort();
            return 0;
        }
        if (r == FRAME_MORE)
            return 0;
        if (r != FRAME_DONE || used < FRAME_HEADER_SIZE || used > FRAME_MAX_SIZE ||
            used > size - off)
            abort();
        if (f.user_len > ACCOUNT_USER_MAX || f.pass_len > ACCOUNT_PASS_MAX ||
            f.user[f.user_len] != '\0' || f.pass[f.pass_len] != '\0')
            abort();
        /* a prefix of a whole frame is never taken for a frame nor refused */
        for (size_t cut = 0; cut < used; cut += 1 + cut / 4) {
            size_t u2 = 0;
            const char *w2 = NULL;
            if (frame_decode(data + off, cut, &g, &u2, &w2) != FRAME_MORE)
                abort();
        }
        n = frame_encode(&f, enc, sizeof(enc));
        if (n != used || memcmp(enc, data + off, used) != 0)
            abort(); /* decoded and re-encoded, the frame is not the same bytes */
        off += used;
    }
    return 0;
}
