/*
 * btree.h - an ordered set of pointers to the caller's items (a B+tree), ordered by the
 * caller's comparison: insert, remove, and walk on from the first item at or after a key. The
 * upload store's index keeps its blocks of names in one, by their lower bounds (upindex.h).
 *
 * DESIGN: leaves hold up to BTREE_LEAF_MAX item pointers and are linked both ways; inner nodes
 * hold up to BTREE_FANOUT children and, as separators, a pointer to the first item of each
 * child but the first. Nothing of an item is copied, so the tree costs about 8 bytes per item
 * divided by how full the leaves are, plus 1/BTREE_FANOUT of that for the inner nodes. Next to
 * each separator an inner node keeps the separator's 128-bit prefix (btree_prefix_fn, if the
 * caller gives one): an insert or a removal descends comparing prefixes in the node, and reads
 * an item only where they tie, so most of its comparisons touch no item (which lie anywhere
 * in memory: a cache miss each). A leaf
 * that overflows splits in half, except when the new item goes at its end: then the full leaf
 * is kept and a new one started (as PostgreSQL splits its rightmost page), so items inserted
 * in order fill their leaves. A node that empties is removed; others are not merged, so after
 * many removals leaves may stay partly empty. A separator always points at the first item of
 * its subtree: removing that item moves it to the next one. Not thread-safe: the caller locks.
 */
#ifndef S1_BTREE_H
#define S1_BTREE_H

#include <stdbool.h>
#include <stddef.h>

#define BTREE_LEAF_MAX 60 /* items per leaf: a leaf is 504 bytes */
#define BTREE_FANOUT 31   /* children per inner node: 1000 bytes */

/* <0, 0, >0 as a is before, the same as, or after b (a may be a key, b is an item). */
typedef int (*btree_cmp_fn)(const void *a, const void *b, void *arg);
/*
 * An item's 128-bit prefix: prefix(a) < prefix(b) must imply that a is before b (equal
 * prefixes say nothing), for every pair of items in the tree.
 */
typedef unsigned __int128 btree_pfx;
typedef btree_pfx (*btree_prefix_fn)(const void *item, void *arg);

struct btree_node;

struct btree {
    struct btree_node *root; /* NULL when empty */
    unsigned height;         /* levels: 1 when the root is a leaf */
    size_t count;            /* items */
    size_t leaves, inners;   /* nodes */
    btree_cmp_fn cmp;        /* item against item */
    btree_prefix_fn prefix;  /* or NULL */
    void *arg;               /* for cmp and prefix */
};

/* A place in the tree: the item btree_next gives next. */
struct btree_iter {
    struct btree_node *leaf; /* NULL at the end */
    unsigned pos;
};

void btree_init(struct btree *t, btree_cmp_fn cmp, btree_prefix_fn prefix, void *arg);
/* Frees the nodes (not the items); t is empty afterwards. */
void btree_release(struct btree *t);
/* Adds item; no item that compares equal may be in t. */
void btree_insert(struct btree *t, void *item);
/* Removes item (this pointer, found by its place in the order); false if it is not in t. */
bool btree_remove(struct btree *t, const void *item);
/*
 * it at the first item that key is not after (kcmp(key, item, t->arg) <= 0), or at the end.
 * kcmp must order keys consistently with t->cmp. kp (may be NULL): the key's prefix, as
 * t->prefix gives an item's (a key whose prefix is below an item's is before it): the inner
 * nodes are then descended comparing prefixes, reading an item only where they tie.
 */
void btree_seek(const struct btree *t, const void *key, const btree_pfx *kp, btree_cmp_fn kcmp,
                struct btree_iter *it);
/* it at the first item. */
void btree_first(const struct btree *t, struct btree_iter *it);
/* The item at it, and it moves to the next one; NULL at the end. */
void *btree_next(struct btree_iter *it);
/* Bytes of the nodes. */
size_t btree_bytes(const struct btree *t);
/*
 * Checks the invariants (order, separators, links, counts): 0, or -1 with the first problem
 * in err (128 bytes). For tests.
 */
int btree_check(const struct btree *t, char *err);

#endif /* S1_BTREE_H */
