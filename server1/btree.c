/*
 * btree.c - see btree.h. Inserts descend recursively and split on the way back up; removals
 * descend keeping their path, take out nodes that empty, and then point any separator that
 * named the removed item at the new first item of its subtree.
 */
#include "btree.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define MAX_HEIGHT 24 /* 31^23 items would not fit in memory */

struct btree_node {
    uint16_t n; /* items (leaf) or children (inner), >= 1 */
    bool leaf;
    union {
        struct {
            struct btree_node *prev, *next; /* leaves in order */
            void *item[BTREE_LEAF_MAX];
        } l;
        struct {
            void *sep[BTREE_FANOUT]; /* sep[i]: the first item of child[i]; sep[0] unused */
            struct btree_node *child[BTREE_FANOUT];
            btree_pfx pfx[BTREE_FANOUT]; /* pfx[i]: the prefix of sep[i] (with t->prefix) */
        } in;
    };
};

/* a leaf is allocated without the room of an inner node's arrays */
#define LEAF_BYTES (offsetof(struct btree_node, l.item) + BTREE_LEAF_MAX * sizeof(void *))
#define INNER_BYTES sizeof(struct btree_node)

void btree_init(struct btree *t, btree_cmp_fn cmp, btree_prefix_fn prefix, void *arg)
{
    memset(t, 0, sizeof(*t));
    t->cmp = cmp;
    t->prefix = prefix;
    t->arg = arg;
}

static btree_pfx prefix_of(const struct btree *t, const void *item)
{
    return t->prefix != NULL ? t->prefix(item, t->arg) : 0;
}

/* Sets separator i of inner node n (and its prefix). */
static void set_sep(const struct btree *t, struct btree_node *n, unsigned i, void *item)
{
    n->in.sep[i] = item;
    n->in.pfx[i] = prefix_of(t, item);
}

static void free_node(struct btree_node *n)
{
    if (!n->leaf) {
        for (unsigned i = 0; i < n->n; i++)
            free_node(n->in.child[i]);
    }
    free(n);
}

void btree_release(struct btree *t)
{
    if (t->root != NULL)
        free_node(t->root);
    btree_init(t, t->cmp, t->prefix, t->arg);
}

static struct btree_node *node_new(struct btree *t, bool leaf)
{
    struct btree_node *n = xcalloc(1, leaf ? LEAF_BYTES : INNER_BYTES);
    n->leaf = leaf;
    if (leaf)
        t->leaves++;
    else
        t->inners++;
    return n;
}

static void node_free(struct btree *t, struct btree_node *n)
{
    if (n->leaf)
        t->leaves--;
    else
        t->inners--;
    free(n);
}

/*
 * The child of inner node n to descend into for key: the last i >= 1 whose separator key is
 * after (or, with or_equal, not before), else 0. kp: key's prefix, or NULL (compare in full).
 */
static unsigned child_for(const struct btree_node *n, const void *key, const btree_pfx *kp,
                          btree_cmp_fn cmp, void *arg, bool or_equal)
{
    unsigned lo = 1, hi = n->n; /* the answer is the number of separators in [1, n) passed */

    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        int c = kp != NULL && *kp != n->in.pfx[mid] ? (*kp > n->in.pfx[mid] ? 1 : -1)
                                                    : cmp(key, n->in.sep[mid], arg);
        if (c > 0 || (or_equal && c == 0))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - 1;
}

/* The first position of leaf n whose item key is not after. */
static unsigned leaf_pos(const struct btree_node *n, const void *key, btree_cmp_fn cmp, void *arg)
{
    unsigned lo = 0, hi = n->n;

    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (cmp(key, n->l.item[mid], arg) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The first item beneath n. */
static void *first_item(const struct btree_node *n)
{
    while (!n->leaf)
        n = n->in.child[0];
    return n->l.item[0];
}

/* ---- insert ---- */

/* Inserts item into leaf n; if n splits, returns the new right leaf (*sep: its first item). */
static struct btree_node *leaf_insert(struct btree *t, struct btree_node *n, void *item,
                                      void **sep)
{
    unsigned pos = leaf_pos(n, item, t->cmp, t->arg);
    void *all[BTREE_LEAF_MAX + 1];
    struct btree_node *r;
    unsigned keep;

    if (n->n < BTREE_LEAF_MAX) {
        memmove(&n->l.item[pos + 1], &n->l.item[pos], (n->n - pos) * sizeof(void *));
        n->l.item[pos] = item;
        n->n++;
        return NULL;
    }
    memcpy(all, n->l.item, pos * sizeof(void *));
    all[pos] = item;
    memcpy(&all[pos + 1], &n->l.item[pos], (n->n - pos) * sizeof(void *));
    /* appending: the full leaf stays full (items that come in order fill their leaves) */
    keep = pos == BTREE_LEAF_MAX ? BTREE_LEAF_MAX : (BTREE_LEAF_MAX + 1) / 2;
    r = node_new(t, true);
    memcpy(n->l.item, all, keep * sizeof(void *));
    n->n = (uint16_t)keep;
    memcpy(r->l.item, &all[keep], (BTREE_LEAF_MAX + 1 - keep) * sizeof(void *));
    r->n = (uint16_t)(BTREE_LEAF_MAX + 1 - keep);
    r->l.prev = n;
    r->l.next = n->l.next;
    if (n->l.next != NULL)
        n->l.next->l.prev = r;
    n->l.next = r;
    *sep = r->l.item[0];
    return r;
}

/* Puts child c (first item s) at place i of inner n; if n splits, returns the new right node. */
static struct btree_node *inner_insert(struct btree *t, struct btree_node *n, unsigned i,
                                       struct btree_node *c, void *s, void **sep)
{
    void *seps[BTREE_FANOUT + 1];
    btree_pfx pfxs[BTREE_FANOUT + 1];
    struct btree_node *kids[BTREE_FANOUT + 1];
    struct btree_node *r;
    unsigned keep;

    if (n->n < BTREE_FANOUT) {
        memmove(&n->in.child[i + 1], &n->in.child[i], (n->n - i) * sizeof(void *));
        memmove(&n->in.sep[i + 1], &n->in.sep[i], (n->n - i) * sizeof(void *));
        memmove(&n->in.pfx[i + 1], &n->in.pfx[i], (n->n - i) * sizeof(btree_pfx));
        n->in.child[i] = c;
        set_sep(t, n, i, s);
        n->n++;
        return NULL;
    }
    memcpy(kids, n->in.child, i * sizeof(void *));
    memcpy(seps, n->in.sep, i * sizeof(void *));
    memcpy(pfxs, n->in.pfx, i * sizeof(btree_pfx));
    kids[i] = c;
    seps[i] = s;
    pfxs[i] = prefix_of(t, s);
    memcpy(&kids[i + 1], &n->in.child[i], (n->n - i) * sizeof(void *));
    memcpy(&seps[i + 1], &n->in.sep[i], (n->n - i) * sizeof(void *));
    memcpy(&pfxs[i + 1], &n->in.pfx[i], (n->n - i) * sizeof(btree_pfx));
    keep = i == BTREE_FANOUT ? BTREE_FANOUT : (BTREE_FANOUT + 1) / 2;
    r = node_new(t, false);
    memcpy(n->in.child, kids, keep * sizeof(void *));
    memcpy(n->in.sep, seps, keep * sizeof(void *));
    memcpy(n->in.pfx, pfxs, keep * sizeof(btree_pfx));
    n->n = (uint16_t)keep;
    memcpy(r->in.child, &kids[keep], (BTREE_FANOUT + 1 - keep) * sizeof(void *));
    memcpy(r->in.sep, &seps[keep], (BTREE_FANOUT + 1 - keep) * sizeof(void *));
    memcpy(r->in.pfx, &pfxs[keep], (BTREE_FANOUT + 1 - keep) * sizeof(btree_pfx));
    r->n = (uint16_t)(BTREE_FANOUT + 1 - keep);
    *sep = r->in.sep[0]; /* the first item of the right node goes up */
    r->in.sep[0] = NULL;
    r->in.pfx[0] = 0;
    return r;
}

static struct btree_node *insert_below(struct btree *t, struct btree_node *n, void *item,
                                       const btree_pfx *ip, void **sep)
{
    struct btree_node *right;
    unsigned i;
    void *s;

    if (n->leaf)
        return leaf_insert(t, n, item, sep);
    i = child_for(n, item, ip, t->cmp, t->arg, false);
    right = insert_below(t, n->in.child[i], item, ip, &s);
    return right == NULL ? NULL : inner_insert(t, n, i + 1, right, s, sep);
}

void btree_insert(struct btree *t, void *item)
{
    btree_pfx ip = prefix_of(t, item);
    struct btree_node *right;
    void *sep;

    t->count++;
    if (t->root == NULL) {
        t->root = node_new(t, true);
        t->root->l.item[0] = item;
        t->root->n = 1;
        t->height = 1;
        return;
    }
    right = insert_below(t, t->root, item, t->prefix != NULL ? &ip : NULL, &sep);
    if (right != NULL) {
        struct btree_node *root = node_new(t, false);
        root->in.child[0] = t->root;
        root->in.child[1] = right;
        set_sep(t, root, 1, sep);
        root->n = 2;
        t->root = root;
        t->height++;
    }
}

/* ---- remove ---- */

bool btree_remove(struct btree *t, const void *item)
{
    struct btree_node *path[MAX_HEIGHT];
    unsigned idx[MAX_HEIGHT];
    struct btree_node *n = t->root;
    btree_pfx ip = prefix_of(t, item);
    unsigned depth = 0, pos;
    int d;

    if (n == NULL)
        return false;
    while (!n->leaf) {
        idx[depth] = child_for(n, item, t->prefix != NULL ? &ip : NULL, t->cmp, t->arg, true);
        path[depth++] = n;
        n = n->in.child[idx[depth - 1]];
    }
    pos = leaf_pos(n, item, t->cmp, t->arg);
    if (pos == n->n || n->l.item[pos] != item)
        return false;
    memmove(&n->l.item[pos], &n->l.item[pos + 1], (n->n - pos - 1) * sizeof(void *));
    n->n--;
    t->count--;
    /* nodes that emptied go, from the leaf up */
    d = (int)depth;
    if (n->n == 0) {
        if (n->l.prev != NULL)
            n->l.prev->l.next = n->l.next;
        if (n->l.next != NULL)
            n->l.next->l.prev = n->l.prev;
        node_free(t, n);
        for (d = (int)depth - 1; d >= 0; d--) {
            struct btree_node *p = path[d];
            unsigned i = idx[d];
            memmove(&p->in.child[i], &p->in.child[i + 1], (p->n - i - 1) * sizeof(void *));
            memmove(&p->in.sep[i], &p->in.sep[i + 1], (p->n - i - 1) * sizeof(void *));
            memmove(&p->in.pfx[i], &p->in.pfx[i + 1], (p->n - i - 1) * sizeof(btree_pfx));
            p->n--;
            if (p->n > 0)
                break;
            node_free(t, p);
        }
        if (d < 0) { /* the last item went */
            t->root = NULL;
            t->height = 0;
            return true;
        }
    }
    /* a separator that named the item (the first of its subtree) names the new first one;
     * only the nodes on the path still there (0..d) can hold it */
    for (int k = d < (int)depth ? d : (int)depth - 1; k >= 0; k--) {
        struct btree_node *p = path[k];
        for (unsigned i = 1; i < p->n; i++) {
            if (p->in.sep[i] == item)
                set_sep(t, p, i, first_item(p->in.child[i]));
        }
        p->in.sep[0] = NULL;
        p->in.pfx[0] = 0;
    }
    /* a root with one child is not needed */
    while (!t->root->leaf && t->root->n == 1) {
        struct btree_node *old = t->root;
        t->root = old->in.child[0];
        node_free(t, old);
        t->height--;
    }
    return true;
}

/* ---- walking ---- */

void btree_seek(const struct btree *t, const void *key, const btree_pfx *kp, btree_cmp_fn kcmp,
                struct btree_iter *it)
{
    struct btree_node *n = t->root;

    it->leaf = NULL;
    it->pos = 0;
    if (n == NULL)
        return;
    if (t->prefix == NULL)
        kp = NULL; /* (the separators have none) */
    while (!n->leaf)
        n = n->in.child[child_for(n, key, kp, kcmp, t->arg, false)];
    it->leaf = n;
    it->pos = leaf_pos(n, key, kcmp, t->arg);
    if (it->pos == n->n) {
        it->leaf = n->l.next;
        it->pos = 0;
    }
}

void btree_first(const struct btree *t, struct btree_iter *it)
{
    struct btree_node *n = t->root;

    it->pos = 0;
    while (n != NULL && !n->leaf)
        n = n->in.child[0];
    it->leaf = n;
}

void *btree_next(struct btree_iter *it)
{
    void *item;

    if (it->leaf == NULL)
        return NULL;
    item = it->leaf->l.item[it->pos++];
    if (it->pos == it->leaf->n) {
        it->leaf = it->leaf->l.next;
        it->pos = 0;
    }
    return item;
}

size_t btree_bytes(const struct btree *t)
{
    return t->leaves * LEAF_BYTES + t->inners * INNER_BYTES;
}

/* ---- checking ---- */

struct check {
    const struct btree *t;
    char *err;
    size_t items, leaves, inners;
    const struct btree_node *last_leaf;
    void *last_item;
};

static int check_node(struct check *k, const struct btree_node *n, unsigned level)
{
    if (n->n == 0 || (n->leaf != (level == 1))) {
        snprintf(k->err, 128, "a node with %u entries at level %u (leaf: %d)", n->n, level,
                 n->leaf);
        return -1;
    }
    if (n->leaf) {
        if (n->l.prev != k->last_leaf || (k->last_leaf != NULL && k->last_leaf->l.next != n)) {
            snprintf(k->err, 128, "leaf %zu is not linked to the one before it", k->leaves);
            return -1;
        }
        for (unsigned i = 0; i < n->n; i++) {
            if (k->last_item != NULL && k->t->cmp(k->last_item, n->l.item[i], k->t->arg) >= 0) {
                snprintf(k->err, 128, "item %zu is not after the one before it", k->items);
                return -1;
            }
            if (k->last_item != NULL &&
                prefix_of(k->t, k->last_item) > prefix_of(k->t, n->l.item[i])) {
                snprintf(k->err, 128, "item %zu has a prefix below the one before it", k->items);
                return -1;
            }
            k->last_item = n->l.item[i];
            k->items++;
        }
        k->leaves++;
        k->last_leaf = n;
        return 0;
    }
    k->inners++;
    for (unsigned i = 0; i < n->n; i++) {
        if (i > 0 && n->in.sep[i] != first_item(n->in.child[i])) {
            snprintf(k->err, 128, "separator %u at level %u is not its child's first item", i,
                     level);
            return -1;
        }
        if (i > 0 && n->in.pfx[i] != prefix_of(k->t, n->in.sep[i])) {
            snprintf(k->err, 128, "separator %u at level %u has a stale prefix", i, level);
            return -1;
        }
        if (check_node(k, n->in.child[i], level - 1) < 0)
            return -1;
    }
    return 0;
}

int btree_check(const struct btree *t, char *err)
{
    struct check k = {.t = t, .err = err};

    if (t->root == NULL) {
        if (t->count != 0 || t->height != 0 || t->leaves != 0 || t->inners != 0) {
            snprintf(err, 128, "an empty tree that counts %zu items", t->count);
            return -1;
        }
        return 0;
    }
    if (check_node(&k, t->root, t->height) < 0)
        return -1;
    if (k.last_leaf->l.next != NULL) {
        snprintf(err, 128, "the last leaf links to another");
        return -1;
    }
    if (k.items != t->count || k.leaves != t->leaves || k.inners != t->inners) {
        snprintf(err, 128, "counts %zu/%zu/%zu items/leaves/inner nodes, found %zu/%zu/%zu",
                 t->count, t->leaves, t->inners, k.items, k.leaves, k.inners);
        return -1;
    }
    return 0;
}
