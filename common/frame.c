/*
 * frame.c - encoder and decoder for the frames described in PROTOCOL.md. Every length is
 * checked against the limits before any byte is copied.
 */
#include "frame.h"

#include <string.h>

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static enum frame_result bad(const char **why, const char *reason)
{
    if (why)
        *why = reason;
    return FRAME_BAD;
}

enum frame_result frame_decode(const void *buf, size_t len, struct frame *f, size_t *used,
                               const char **why)
{
    const uint8_t *p = buf;
    uint32_t plen;

    if (len < FRAME_HEADER_SIZE)
        return FRAME_MORE;
    plen = get32(p);
    if (plen > FRAME_MAX_PAYLOAD)
        return bad(why, "payload length over the limit");
    if (get16(p + 6) != 0)
        return bad(why, "reserved field is not zero");
    if (len < FRAME_HEADER_SIZE + plen)
        return FRAME_MORE;

    memset(f, 0, sizeof(*f));
    f->type = p[4];
    f->status = p[5];
    f->id = get32(p + 8);
    p += FRAME_HEADER_SIZE;

    switch (f->type) {
    case FRAME_HELLO:
        if (plen != 6)
            return bad(why, "HELLO payload is not 6 bytes");
        if (get32(p) != FRAME_MAGIC)
            return bad(why, "HELLO magic is wrong");
        f->version = get16(p + 4);
        break;
    case FRAME_HELLO_ACK:
        if (plen != 2)
            return bad(why, "HELLO_ACK payload is not 2 bytes");
        f->version = get16(p);
        break;
    case FRAME_CREATE:
    case FRAME_VERIFY:
        if (plen < 3)
            return bad(why, "credential payload too short");
        f->user_len = p[0];
        f->pass_len = get16(p + 1);
        if (f->user_len > ACCOUNT_USER_MAX || f->pass_len > ACCOUNT_PASS_MAX)
            return bad(why, "username or password length over the limit");
        if (plen != 3u + f->user_len + f->pass_len)
            return bad(why, "credential lengths do not add up to the payload length");
        memcpy(f->user, p + 3, f->user_len);
        memcpy(f->pass, p + 3 + f->user_len, f->pass_len);
        break;
    case FRAME_REPLY:
    case FRAME_PING:
        if (plen != 0)
            return bad(why, "REPLY/PING payload is not empty");
        break;
    default:
        return bad(why, "unknown frame type");
    }
    *used = FRAME_HEADER_SIZE + plen;
    return FRAME_DONE;
}

size_t frame_encode(const struct frame *f, void *buf, size_t cap)
{
    uint8_t *p = buf;
    size_t plen;

    switch (f->type) {
    case FRAME_HELLO:
        plen = 6;
        break;
    case FRAME_HELLO_ACK:
        plen = 2;
        break;
    case FRAME_CREATE:
    case FRAME_VERIFY:
        if (f->user_len > ACCOUNT_USER_MAX || f->pass_len > ACCOUNT_PASS_MAX)
            return 0;
        plen = 3u + f->user_len + f->pass_len;
        break;
    case FRAME_REPLY:
    case FRAME_PING:
        plen = 0;
        break;
    default:
        return 0;
    }
    if (cap < FRAME_HEADER_SIZE + plen)
        return 0;
    put32(p, (uint32_t)plen);
    p[4] = f->type;
    p[5] = f->status;
    put16(p + 6, 0);
    put32(p + 8, f->id);
    p += FRAME_HEADER_SIZE;
    switch (f->type) {
    case FRAME_HELLO:
        put32(p, FRAME_MAGIC);
        put16(p + 4, f->version);
        break;
    case FRAME_HELLO_ACK:
        put16(p, f->version);
        break;
    case FRAME_CREATE:
    case FRAME_VERIFY:
        p[0] = f->user_len;
        put16(p + 1, f->pass_len);
        memcpy(p + 3, f->user, f->user_len);
        memcpy(p + 3 + f->user_len, f->pass, f->pass_len);
        break;
    default:
        break;
    }
    return FRAME_HEADER_SIZE + plen;
}

size_t frame_encode_hello(void *buf, size_t cap)
{
    struct frame f = {.type = FRAME_HELLO, .version = FRAME_VERSION};
    return frame_encode(&f, buf, cap);
}

size_t frame_encode_reply(uint32_t id, enum frame_status st, void *buf, size_t cap)
{
    struct frame f = {.type = FRAME_REPLY, .status = (uint8_t)st, .id = id};
    return frame_encode(&f, buf, cap);
}

size_t frame_encode_cred(enum frame_type type, uint32_t id, const char *user, size_t user_len,
                         const char *pass, size_t pass_len, void *buf, size_t cap)
{
    uint8_t *p = buf;
    size_t plen = 3 + user_len + pass_len;

    if ((type != FRAME_CREATE && type != FRAME_VERIFY) || user_len > ACCOUNT_USER_MAX ||
        pass_len > ACCOUNT_PASS_MAX || cap < FRAME_HEADER_SIZE + plen)
        return 0;
    put32(p, (uint32_t)plen);
    p[4] = (uint8_t)type;
    p[5] = 0;
    put16(p + 6, 0);
    put32(p + 8, id);
    p[12] = (uint8_t)user_len;
    put16(p + 13, (uint16_t)pass_len);
    memcpy(p + 15, user, user_len);
    memcpy(p + 15 + user_len, pass, pass_len);
    return FRAME_HEADER_SIZE + plen;
}

const char *frame_status_name(enum frame_status st)
{
    static const char *names[] = {"ok",          "exists",   "denied",     "invalid",
                                  "unavailable", "internal", "bad-version", "expired"};
    return (unsigned)st < sizeof(names) / sizeof(names[0]) ? names[st] : "unknown";
}
