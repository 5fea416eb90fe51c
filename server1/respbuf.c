/*
 * respbuf.c - see respbuf.h.
 */
#include "respbuf.h"

#include <stdlib.h>

#include "metrics.h"

struct respbuf *respbuf_new(struct respbuf_budget *budget, uint64_t size, size_t align)
{
    uint64_t want = size < RESPBUF_CHUNK ? size : RESPBUF_CHUNK;
    size_t cap = (size_t)((want + align - 1) / align * align);
    struct respbuf *rb;

    if (cap == 0)
        cap = align;
    if (budget->used + cap > budget->limit)
        return NULL;
    rb = malloc(sizeof(*rb));
    if (rb == NULL)
        return NULL;
    if (posix_memalign(&rb->data, align, cap) != 0) {
        free(rb);
        return NULL;
    }
    rb->budget = budget;
    rb->cap = cap;
    budget->used += cap;
    if (budget->gauge != NULL)
        metrics_gauge_add(budget->gauge, (int64_t)cap);
    return rb;
}

void respbuf_free(struct respbuf *rb)
{
    if (rb == NULL)
        return;
    rb->budget->used -= rb->cap;
    if (rb->budget->gauge != NULL)
        metrics_gauge_add(rb->budget->gauge, -(int64_t)rb->cap);
    free(rb->data);
    free(rb);
}
