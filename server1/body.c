/* body.c - see body.h: memory bodies, and what every body shares. */
#include "body.h"

#include <stdlib.h>

#include <event2/buffer.h>

#include "compat.h"
#include "log.h"

static void free_owned(const void *data, size_t len, void *owned)
{
    UNUSED(data);
    UNUSED(len);
    free(owned);
}

int body_mem_fill(struct s1_body *b, struct evbuffer *out,
                  void (*cleanup)(const void *data, size_t len, void *owner))
{
    if (b->len == 0)
        return 0;
    if (evbuffer_add_reference(out, b->data, (size_t)b->len, cleanup, b->_owner) < 0)
        return -1;
    if (cleanup != NULL)
        b->_owner = NULL; /* the output frees it now */
    b->data = (const char *)b->data + b->len;
    b->len = 0;
    return 0;
}

static int mem_fill(struct s1_body *b, struct evbuffer *out, size_t budget)
{
    UNUSED(budget);
    return body_mem_fill(b, out, NULL);
}

static int owned_fill(struct s1_body *b, struct evbuffer *out, size_t budget)
{
    UNUSED(budget);
    return body_mem_fill(b, out, free_owned);
}

static void mem_release(struct s1_body *b)
{
    UNUSED(b);
}

static void owned_release(struct s1_body *b)
{
    free(b->_owner);
    b->_owner = NULL;
}

static int length_fill(struct s1_body *b, struct evbuffer *out, size_t budget)
{
    UNUSED(b);
    UNUSED(out);
    UNUSED(budget);
    log_error("a body of a length only was asked for its bytes");
    return -1;
}

static const struct s1_body_ops mem_ops = {.fill = mem_fill, .release = mem_release};
static const struct s1_body_ops owned_ops = {.fill = owned_fill, .release = owned_release};
static const struct s1_body_ops length_ops = {.fill = length_fill, .release = mem_release};

void body_mem(struct s1_body *b, const void *data, size_t len)
{
    *b = (struct s1_body){.ops = &mem_ops, .len = len, .data = data, ._fd = -1};
}

void body_mem_owned(struct s1_body *b, const void *data, size_t len, void *owned)
{
    *b = (struct s1_body){.ops = &owned_ops, .len = len, .data = data, ._owner = owned,
                          ._fd = -1};
}

void body_length_only(struct s1_body *b, uint64_t len)
{
    *b = (struct s1_body){.ops = &length_ops, .len = len, ._fd = -1};
}

void body_consume(struct s1_body *b, size_t n)
{
    b->data = (const char *)b->data + n;
    b->len -= n;
}

void body_release(struct s1_body *b)
{
    if (b->ops != NULL)
        b->ops->release(b);
    *b = (struct s1_body){.ops = NULL, ._fd = -1};
}
