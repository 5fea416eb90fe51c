/*
 * xalloc.h - allocation wrappers that abort with the requested size when memory runs out,
 * so call sites never check for NULL. Thread-safe.
 */
#ifndef XALLOC_H
#define XALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
char *xstrdup(const char *s);
/* posix_memalign that aborts on failure; free with free(). */
void *xmemalign(size_t align, size_t size);

#endif /* XALLOC_H */
