/*
 * fuzz_linkseal.c - the opening of sealed records (common/linkseal), which both sides run on
 * bytes from the other once the link is sealed. The first input byte picks the mode:
 * - even: the rest is what a peer without the key sends: its first record never opens (no
 *   forgery), a length out of bounds is refused with a reason, and no more than
 *   LINKSEAL_RECORD_MAX bytes are ever waited for;
 * - odd: the rest is a stream of frames (frame_decode); each is sealed in place and opened on
 *   the other side, giving back exactly its bytes, and a copy of its record with one bit
 *   flipped (chosen by the input) is refused without moving the receiver's counter.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/linkseal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void ends(struct linkseal *c, struct linkseal *s)
{
    uint8_t key[LINKAUTH_KEY_SIZE];
    uint8_t nc[LINKAUTH_NONCE_SIZE];
    uint8_t ns[LINKAUTH_NONCE_SIZE];

    memset(key, 0x4b, sizeof(key));
    memset(nc, 0x11, sizeof(nc));
    memset(ns, 0x22, sizeof(ns));
    linkseal_init(c, key, LINKAUTH_SERVER1, nc, ns);
    linkseal_init(s, key, LINKAUTH_SERVER2, nc, ns);
}

/* Records from a peer without the key: the first one is refused or waited for. */
static void open_first(struct linkseal *s, const uint8_t *data, size_t size)
{
    static uint8_t buf[65536 + LINKSEAL_RECORD_MAX];
    uint8_t plain[FRAME_MAX_SIZE];
    size_t plain_len = 0;
    size_t used = 0;
    const char *why = NULL;
    enum linkseal_result r;

    if (size > sizeof(buf))
        size = sizeof(buf);
    memcpy(buf, data, size);
    r = linkseal_open(&s->rx, buf, size, plain, &plain_len, &used, &why);
    if (r == LINKSEAL_DONE)
        abort(); /* a record opened without the key */
    if (r == LINKSEAL_BAD && why == NULL)
        abort();
    if (r == LINKSEAL_MORE && size >= LINKSEAL_RECORD_MAX)
        abort(); /* waiting for more than the largest record */
    if (s->rx.seq != 0)
        abort();
}

static void seal_stream(struct linkseal *c, struct linkseal *s, const uint8_t *data,
                        size_t size)
{
    uint8_t rec[LINKSEAL_RECORD_MAX];
    uint8_t bad[LINKSEAL_RECORD_MAX];
    uint8_t plain[FRAME_MAX_SIZE];
    struct frame f;
    size_t off = 0;

    for (int frames = 0; off < size && frames < 64; frames++) {
        size_t used = 0;
        size_t n;
        size_t plain_len = 0;
        size_t rused = 0;
        size_t bit;
        uint64_t seq;

        if (frame_decode(data + off, size - off, &f, &used, NULL) != FRAME_DONE)
            return;
        memcpy(rec + LINKSEAL_LEN_SIZE, data + off, used);
        n = linkseal_seal(&c->tx, rec, used);
        if (n != used + LINKSEAL_OVERHEAD)
            abort();
        /* one bit flipped, chosen by the frame's bytes: refused, counter unchanged */
        bit = (data[off] * 131u + used * 7u + (unsigned)frames) % (n * 8);
        memcpy(bad, rec, n);
        bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        seq = s->rx.seq;
        if (linkseal_open(&s->rx, bad, n, plain, &plain_len, &rused, NULL) == LINKSEAL_DONE ||
            s->rx.seq != seq)
            abort();
        /* the record itself opens, in place, into the same bytes */
        if (linkseal_open(&s->rx, rec, n, rec + LINKSEAL_LEN_SIZE, &plain_len, &rused, NULL) !=
                LINKSEAL_DONE ||
            rused != n || plain_len != used ||
            memcmp(rec + LINKSEAL_LEN_SIZE, data + off, used) != 0)
            abort();
        off += used;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct linkseal c;
    static struct linkseal s;

    if (size < 1)
        return 0;
    ends(&c, &s);
    if (data[0] % 2 == 0)
        open_first(&s, data + 1, size - 1);
    else
        seal_stream(&c, &s, data + 1, size - 1);
    return 0;
}
