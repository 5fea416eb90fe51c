/*
 * upbudget.c - see upbudget.h. Accounts holding something are kept in a chained hash table
 * that grows with them and never shrinks (its size follows the most uploads ever in flight).
 */
#include "upbudget.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "xalloc.h"

#define NAME_MAX_BYTES 64 /* = ACCOUNT_USER_MAX */

struct upbudget_account {
    struct upbudget_account *next;
    uint64_t hash;
    uint64_t mem;        /* bytes of its bodies in memory */
    uint64_t temp;       /* bytes of its bodies in temp files */
    unsigned bodies;     /* tickets that point here */
    char name[NAME_MAX_BYTES + 1];
};

void upbudget_init(struct upbudget *b, uint64_t mem_max, uint64_t temp_max, unsigned share_pct,
                   uint64_t body_mem_max)
{
    memset(b, 0, sizeof(*b));
    b->mem_max = mem_max;
    b->temp_max = temp_max;
    b->share_pct = share_pct >= 1 && share_pct <= 100 ? share_pct : 100;
    b->body_mem_max = body_mem_max;
    pthread_mutex_init(&b->lock, NULL);
    b->nbuckets = 64;
    b->buckets = xcalloc(b->nbuckets, sizeof(*b->buckets));
}

void upbudget_release_all(struct upbudget *b)
{
    if (b->buckets == NULL)
        return;
    for (size_t i = 0; i < b->nbuckets; i++) {
        while (b->buckets[i] != NULL) {
            struct upbudget_account *a = b->buckets[i];
            b->buckets[i] = a->next;
            free(a);
        }
    }
    free(b->buckets);
    b->buckets = NULL;
    pthread_mutex_destroy(&b->lock);
}

/* The entry of user, or where it would go; lock held. */
static struct upbudget_account **slot(struct upbudget *b, const char *user, uint64_t h)
{
    struct upbudget_account **pp = &b->buckets[h & (b->nbuckets - 1)];

    for (; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->hash == h && strcmp((*pp)->name, user) == 0)
            break;
    }
    return pp;
}

static void grow(struct upbudget *b)
{
    size_t n = b->nbuckets * 2;
    struct upbudget_account **nb = xcalloc(n, sizeof(*nb));

    for (size_t i = 0; i < b->nbuckets; i++) {
        while (b->buckets[i] != NULL) {
            struct upbudget_account *a = b->buckets[i];
            b->buckets[i] = a->next;
            a->next = nb[a->hash & (n - 1)];
            nb[a->hash & (n - 1)] = a;
        }
    }
    free(b->buckets);
    b->buckets = nb;
    b->nbuckets = n;
}

/* An account's part of max (at least 1 byte). */
static uint64_t share_of(const struct upbudget *b, uint64_t max)
{
    uint64_t s = (uint64_t)((double)max * b->share_pct / 100.0);
    return s > 0 ? s : 1;
}

/* upbudget_take, or with mem_ok false upbudget_take_temp */
static int take(struct upbudget *b, const char *user, uint64_t len, bool mem_ok,
                struct upbudget_ticket *t)
{
    size_t ulen = strnlen(user, NAME_MAX_BYTES + 1);
    uint64_t h = fnv1a64(user, ulen);
    struct upbudget_account **pp;
    struct upbudget_account *a;
    uint64_t mem = 0, temp = 0;
    int place = -EAGAIN;

    *t = (struct upbudget_ticket){0};
    if (ulen > NAME_MAX_BYTES)
        return -EINVAL;
    pthread_mutex_lock(&b->lock);
    pp = slot(b, user, h);
    if (*pp != NULL) {
        mem = (*pp)->mem;
        temp = (*pp)->temp;
    }
    if (mem_ok && len <= b->body_mem_max && b->mem_used + len <= b->mem_max &&
        mem + len <= share_of(b, b->mem_max)) {
        place = UPBUDGET_MEM;
        b->mem_used += len;
    } else if (b->temp_max == 0 ||
               (b->temp_used + len <= b->temp_max &&
                (temp == 0 || temp + len <= share_of(b, b->temp_max)))) {
        place = UPBUDGET_TEMP;
        b->temp_used += len;
    }
    if (place < 0) {
        pthread_mutex_unlock(&b->lock);
        return place;
    }
    a = *pp;
    if (a == NULL) {
        if (b->naccounts >= b->nbuckets) {
            grow(b);
            pp = slot(b, user, h);
        }
        a = xcalloc(1, sizeof(*a));
        a->hash = h;
        memcpy(a->name, user, ulen + 1);
        *pp = a;
        b->naccounts++;
    }
    if (place == UPBUDGET_MEM)
        a->mem += len;
    else
        a->temp += len;
    a->bodies++;
    pthread_mutex_unlock(&b->lock);
    *t = (struct upbudget_ticket){.account = a, .place = (enum upbudget_place)place, .len = len};
    return place;
}

int upbudget_take(struct upbudget *b, const char *user, uint64_t len, struct upbudget_ticket *t)
{
    return take(b, user, len, true, t);
}

int upbudget_take_temp(struct upbudget *b, const char *user, uint64_t len,
                       struct upbudget_ticket *t)
{
    return take(b, user, len, false, t);
}

int upbudget_grow(struct upbudget *b, struct upbudget_ticket *t, uint64_t add)
{
    struct upbudget_account *a = t->account;
    int rc = -EAGAIN;

    if (a == NULL || t->place != UPBUDGET_TEMP)
        return -EINVAL;
    pthread_mutex_lock(&b->lock);
    if (b->temp_max == 0 ||
        (add <= b->temp_max - b->temp_used &&
         (a->temp == t->len || a->temp + add <= share_of(b, b->temp_max)))) {
        b->temp_used += add;
        a->temp += add;
        t->len += add;
        rc = 0;
    }
    pthread_mutex_unlock(&b->lock);
    return rc;
}

void upbudget_release(struct upbudget *b, struct upbudget_ticket *t)
{
    struct upbudget_account *a = t->account;

    if (a == NULL)
        return;
    pthread_mutex_lock(&b->lock);
    if (t->place == UPBUDGET_MEM) {
        a->mem -= t->len;
        b->mem_used -= t->len;
    } else {
        a->temp -= t->len;
        b->temp_used -= t->len;
    }
    if (--a->bodies == 0) {
        struct upbudget_account **pp = slot(b, a->name, a->hash);
        *pp = a->next;
        b->naccounts--;
        free(a);
    }
    pthread_mutex_unlock(&b->lock);
    *t = (struct upbudget_ticket){0};
}

void upbudget_held(struct upbudget *b, const char *user, uint64_t *mem, uint64_t *temp)
{
    size_t ulen = strnlen(user, NAME_MAX_BYTES + 1);
    struct upbudget_account *a;

    pthread_mutex_lock(&b->lock);
    a = ulen <= NAME_MAX_BYTES ? *slot(b, user, fnv1a64(user, ulen)) : NULL;
    *mem = a != NULL ? a->mem : 0;
    *temp = a != NULL ? a->temp : 0;
    pthread_mutex_unlock(&b->lock);
}
