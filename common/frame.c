/*
 * frame.c - encoder and decoder for the frames described in docs/protocol.md. Every length is
 * checked against the limits before any byte is copied.
 */
#include "frame.h"

#include <string.h>

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
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

static void put_header(uint8_t *p, size_t plen, uint8_t type, uint8_t status, uint64_t id,
                       uint32_t budget_ms)
{
    put32(p, (uint32_t)plen);
    p[4] = type;
    p[5] = status;
    put16(p + 6, 0);
    put64(p + 8, id);
    put32(p + 16, budget_ms);
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
    f->id = get64(p + 8);
    f->budget_ms = get32(p + 16);
    p += FRAME_HEADER_SIZE;

    switch (f->type) {
    case FRAME_HELLO:
        if (plen != FRAME_HELLO_PAYLOAD)
            return bad(why, "HELLO payload is not 38 bytes");
        if (get32(p) != FRAME_MAGIC)
            return bad(why, "HELLO magic is wrong");
        f->version = get16(p + 4);
        memcpy(f->nonce, p + 6, FRAME_NONCE_SIZE);
        break;
    case FRAME_HELLO_ACK:
        if (plen != FRAME_HELLO_ACK_PAYLOAD)
            return bad(why, "HELLO_ACK payload is not 66 bytes");
        f->version = get16(p);
        memcpy(f->nonce, p + 2, FRAME_NONCE_SIZE);
        memcpy(f->mac, p + 2 + FRAME_NONCE_SIZE, FRAME_MAC_SIZE);
        break;
    case FRAME_AUTH:
        if (plen != FRAME_AUTH_PAYLOAD)
            return bad(why, "AUTH payload is not 32 bytes");
        memcpy(f->mac, p, FRAME_MAC_SIZE);
        break;
    case FRAME_CREATE:
        if (plen < 3 + FRAME_TOKEN_SIZE)
            return bad(why, "CREATE payload too short");
        f->user_len = p[0];
        f->pass_len = get16(p + 1);
        if (f->user_len > ACCOUNT_USER_MAX || f->pass_len > ACCOUNT_PASS_MAX)
            return bad(why, "username or password length over the limit");
        if (plen != 3u + FRAME_TOKEN_SIZE + f->user_len + f->pass_len)
            return bad(why, "credential lengths do not add up to the payload length");
        memcpy(f->token, p + 3, FRAME_TOKEN_SIZE);
        memcpy(f->user, p + 3 + FRAME_TOKEN_SIZE, f->user_len);
        memcpy(f->pass, p + 3 + FRAME_TOKEN_SIZE + f->user_len, f->pass_len);
        break;
    case FRAME_VERIFY:
    case FRAME_DELETE:
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
    case FRAME_SETPASS:
        if (plen < 5)
            return bad(why, "SETPASS payload too short");
        f->user_len = p[0];
        f->pass_len = get16(p + 1);
        f->new_len = get16(p + 3);
        if (f->user_len > ACCOUNT_USER_MAX || f->pass_len > ACCOUNT_PASS_MAX ||
            f->new_len > ACCOUNT_PASS_MAX)
            return bad(why, "username or password length over the limit");
        if (plen != 5u + f->user_len + f->pass_len + f->new_len)
            return bad(why, "credential lengths do not add up to the payload length");
        memcpy(f->user, p + 5, f->user_len);
        memcpy(f->pass, p + 5 + f->user_len, f->pass_len);
        memcpy(f->new_pass, p + 5 + f->user_len + f->pass_len, f->new_len);
        break;
    case FRAME_REPLY:
        if (plen < 2)
            return bad(why, "REPLY payload too short");
        f->req_type = p[0];
        f->user_len = p[1];
        if (!frame_is_request(f->req_type))
            return bad(why, "REPLY echoes a type that is not a request");
        if (f->user_len > ACCOUNT_USER_MAX)
            return bad(why, "username length over the limit");
        if (plen != 2u + f->user_len)
            return bad(why, "REPLY echo length does not add up to the payload length");
        memcpy(f->user, p + 2, f->user_len);
        break;
    case FRAME_INVALIDATE:
        if (plen < 1)
            return bad(why, "INVALIDATE payload too short");
        f->user_len = p[0];
        if (f->user_len == 0 || f->user_len > ACCOUNT_USER_MAX)
            return bad(why, "INVALIDATE username length out of range");
        if (plen != 1u + f->user_len)
            return bad(why, "INVALIDATE length does not add up to the payload length");
        if (f->id == 0)
            return bad(why, "INVALIDATE with id 0");
        memcpy(f->user, p + 1, f->user_len);
        break;
    case FRAME_PING:
    case FRAME_INVALIDATE_ACK:
        if (plen != 0)
            return bad(why, "PING or INVALIDATE_ACK payload is not empty");
        break;
    case FRAME_LEASE:
        if (plen != FRAME_LEASE_PAYLOAD)
            return bad(why, "LEASE payload is not 4 bytes");
        if (f->id != 0)
            return bad(why, "LEASE with an id");
        f->lease_ms = get32(p);
        if (f->lease_ms > FRAME_LEASE_MAX_MS)
            return bad(why, "LEASE longer than the limit");
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
        plen = FRAME_HELLO_PAYLOAD;
        break;
    case FRAME_HELLO_ACK:
        plen = FRAME_HELLO_ACK_PAYLOAD;
        break;
    case FRAME_AUTH:
        plen = FRAME_AUTH_PAYLOAD;
        break;
    case FRAME_CREATE:
    case FRAME_VERIFY:
    case FRAME_DELETE:
        if (f->user_len > ACCOUNT_USER_MAX || f->pass_len > ACCOUNT_PASS_MAX)
            return 0;
        plen = 3u + (f->type == FRAME_CREATE ? FRAME_TOKEN_SIZE : 0) + f->user_len + f->pass_len;
        break;
    case FRAME_SETPASS:
        if (f->user_len > ACCOUNT_USER_MAX || f->pass_len > ACCOUNT_PASS_MAX ||
            f->new_len > ACCOUNT_PASS_MAX)
            return 0;
        plen = 5u + f->user_len + f->pass_len + f->new_len;
        break;
    case FRAME_REPLY:
        if (f->user_len > ACCOUNT_USER_MAX || !frame_is_request(f->req_type))
            return 0;
        plen = 2u + f->user_len;
        break;
    case FRAME_INVALIDATE:
        if (f->user_len == 0 || f->user_len > ACCOUNT_USER_MAX || f->id == 0)
            return 0;
        plen = 1u + f->user_len;
        break;
    case FRAME_PING:
    case FRAME_INVALIDATE_ACK:
        plen = 0;
        break;
    case FRAME_LEASE:
        if (f->lease_ms > FRAME_LEASE_MAX_MS || f->id != 0)
            return 0;
        plen = FRAME_LEASE_PAYLOAD;
        break;
    default:
        return 0;
    }
    if (cap < FRAME_HEADER_SIZE + plen)
        return 0;
    put_header(p, plen, f->type, f->status, f->id, f->budget_ms);
    p += FRAME_HEADER_SIZE;
    switch (f->type) {
    case FRAME_HELLO:
        put32(p, FRAME_MAGIC);
        put16(p + 4, f->version);
        memcpy(p + 6, f->nonce, FRAME_NONCE_SIZE);
        break;
    case FRAME_HELLO_ACK:
        put16(p, f->version);
        memcpy(p + 2, f->nonce, FRAME_NONCE_SIZE);
        memcpy(p + 2 + FRAME_NONCE_SIZE, f->mac, FRAME_MAC_SIZE);
        break;
    case FRAME_AUTH:
        memcpy(p, f->mac, FRAME_MAC_SIZE);
        break;
    case FRAME_CREATE:
        p[0] = f->user_len;
        put16(p + 1, f->pass_len);
        memcpy(p + 3, f->token, FRAME_TOKEN_SIZE);
        memcpy(p + 3 + FRAME_TOKEN_SIZE, f->user, f->user_len);
        memcpy(p + 3 + FRAME_TOKEN_SIZE + f->user_len, f->pass, f->pass_len);
        break;
    case FRAME_VERIFY:
    case FRAME_DELETE:
        p[0] = f->user_len;
        put16(p + 1, f->pass_len);
        memcpy(p + 3, f->user, f->user_len);
        memcpy(p + 3 + f->user_len, f->pass, f->pass_len);
        break;
    case FRAME_SETPASS:
        p[0] = f->user_len;
        put16(p + 1, f->pass_len);
        put16(p + 3, f->new_len);
        memcpy(p + 5, f->user, f->user_len);
        memcpy(p + 5 + f->user_len, f->pass, f->pass_len);
        memcpy(p + 5 + f->user_len + f->pass_len, f->new_pass, f->new_len);
        break;
    case FRAME_INVALIDATE:
        p[0] = f->user_len;
        memcpy(p + 1, f->user, f->user_len);
        break;
    case FRAME_REPLY:
        p[0] = f->req_type;
        p[1] = f->user_len;
        memcpy(p + 2, f->user, f->user_len);
        break;
    case FRAME_LEASE:
        put32(p, f->lease_ms);
        break;
    default:
        break;
    }
    return FRAME_HEADER_SIZE + plen;
}

size_t frame_encode_reply(uint64_t id, enum frame_status st, uint8_t req_type, const char *user,
                          size_t user_len, void *buf, size_t cap)
{
    return frame_encode_reply_retry(id, st, req_type, user, user_len, 0, buf, cap);
}

size_t frame_encode_reply_retry(uint64_t id, enum frame_status st, uint8_t req_type,
                                const char *user, size_t user_len, uint32_t retry_ms, void *buf,
                                size_t cap)
{
    uint8_t *p = buf;
    size_t plen = 2 + user_len;

    if (!frame_is_request(req_type) || user_len > ACCOUNT_USER_MAX ||
        cap < FRAME_HEADER_SIZE + plen)
        return 0;
    put_header(p, plen, FRAME_REPLY, (uint8_t)st, id, retry_ms);
    p[FRAME_HEADER_SIZE] = req_type;
    p[FRAME_HEADER_SIZE + 1] = (uint8_t)user_len;
    if (user_len > 0)
        memcpy(p + FRAME_HEADER_SIZE + 2, user, user_len);
    return FRAME_HEADER_SIZE + plen;
}

size_t frame_encode_cred(enum frame_type type, uint64_t id, uint32_t budget_ms, const char *user,
                         size_t user_len, const char *pass, size_t pass_len, void *buf,
                         size_t cap)
{
    uint8_t *p = buf;
    size_t plen = 3 + user_len + pass_len;

    if ((type != FRAME_VERIFY && type != FRAME_DELETE) || user_len > ACCOUNT_USER_MAX ||
        pass_len > ACCOUNT_PASS_MAX || cap < FRAME_HEADER_SIZE + plen)
        return 0;
    put_header(p, plen, (uint8_t)type, 0, id, budget_ms);
    p += FRAME_HEADER_SIZE;
    p[0] = (uint8_t)user_len;
    put16(p + 1, (uint16_t)pass_len);
    memcpy(p + 3, user, user_len);
    memcpy(p + 3 + user_len, pass, pass_len);
    return FRAME_HEADER_SIZE + plen;
}

size_t frame_encode_create(uint64_t id, uint32_t budget_ms, const uint8_t *token,
                           const char *user, size_t user_len, const char *pass, size_t pass_len,
                           void *buf, size_t cap)
{
    uint8_t *p = buf;
    size_t plen = 3 + FRAME_TOKEN_SIZE + user_len + pass_len;

    if (user_len > ACCOUNT_USER_MAX || pass_len > ACCOUNT_PASS_MAX ||
        cap < FRAME_HEADER_SIZE + plen)
        return 0;
    put_header(p, plen, FRAME_CREATE, 0, id, budget_ms);
    p += FRAME_HEADER_SIZE;
    p[0] = (uint8_t)user_len;
    put16(p + 1, (uint16_t)pass_len);
    memcpy(p + 3, token, FRAME_TOKEN_SIZE);
    memcpy(p + 3 + FRAME_TOKEN_SIZE, user, user_len);
    memcpy(p + 3 + FRAME_TOKEN_SIZE + user_len, pass, pass_len);
    return FRAME_HEADER_SIZE + plen;
}

size_t frame_encode_setpass(uint64_t id, uint32_t budget_ms, const char *user, size_t user_len,
                            const char *pass, size_t pass_len, const char *new_pass,
                            size_t new_len, void *buf, size_t cap)
{
    uint8_t *p = buf;
    size_t plen = 5 + user_len + pass_len + new_len;

    if (user_len > ACCOUNT_USER_MAX || pass_len > ACCOUNT_PASS_MAX ||
        new_len > ACCOUNT_PASS_MAX || cap < FRAME_HEADER_SIZE + plen)
        return 0;
    put_header(p, plen, FRAME_SETPASS, 0, id, budget_ms);
    p += FRAME_HEADER_SIZE;
    p[0] = (uint8_t)user_len;
    put16(p + 1, (uint16_t)pass_len);
    put16(p + 3, (uint16_t)new_len);
    memcpy(p + 5, user, user_len);
    memcpy(p + 5 + user_len, pass, pass_len);
    memcpy(p + 5 + user_len + pass_len, new_pass, new_len);
    return FRAME_HEADER_SIZE + plen;
}

size_t frame_encode_invalidate(uint64_t id, const char *user, size_t user_len, void *buf,
                               size_t cap)
{
    uint8_t *p = buf;
    size_t plen = 1 + user_len;

    if (id == 0 || user_len == 0 || user_len > ACCOUNT_USER_MAX ||
        cap < FRAME_HEADER_SIZE + plen)
        return 0;
    put_header(p, plen, FRAME_INVALIDATE, 0, id, 0);
    p[FRAME_HEADER_SIZE] = (uint8_t)user_len;
    memcpy(p + FRAME_HEADER_SIZE + 1, user, user_len);
    return FRAME_HEADER_SIZE + plen;
}

size_t frame_encode_invalidate_ack(uint64_t id, void *buf, size_t cap)
{
    if (cap < FRAME_HEADER_SIZE)
        return 0;
    put_header(buf, 0, FRAME_INVALIDATE_ACK, 0, id, 0);
    return FRAME_HEADER_SIZE;
}

size_t frame_encode_lease(uint32_t lease_ms, void *buf, size_t cap)
{
    uint8_t *p = buf;

    if (lease_ms > FRAME_LEASE_MAX_MS || cap < FRAME_HEADER_SIZE + FRAME_LEASE_PAYLOAD)
        return 0;
    put_header(p, FRAME_LEASE_PAYLOAD, FRAME_LEASE, 0, 0, 0);
    put32(p + FRAME_HEADER_SIZE, lease_ms);
    return FRAME_HEADER_SIZE + FRAME_LEASE_PAYLOAD;
}

const char *frame_status_name(enum frame_status st)
{
    static const char *names[] = {"ok",       "exists",      "denied",  "invalid", "unavailable",
                                  "internal", "bad-version", "expired", "limited"};
    return (unsigned)st < sizeof(names) / sizeof(names[0]) ? names[st] : "unknown";
}
