/* mailbox.c - see mailbox.h. */
#include "mailbox.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"

int mailbox_init(struct mailbox *mb)
{
    STAILQ_INIT(&mb->msgs);
    mb->attached = false;
    mb->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (mb->fd < 0)
        return -1;
    pthread_mutex_init(&mb->lock, NULL);
    return 0;
}

static void on_mail(evutil_socket_t fd, short what, void *arg)
{
    struct mailbox *mb = arg;
    struct mailbox_list msgs;
    uint64_t v;
    (void)what;

    if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        log_debug("mailbox read: %d", errno);
    STAILQ_INIT(&msgs);
    pthread_mutex_lock(&mb->lock);
    STAILQ_CONCAT(&msgs, &mb->msgs);
    pthread_mutex_unlock(&mb->lock);
    while (!STAILQ_EMPTY(&msgs)) {
        struct mailbox_msg *m = STAILQ_FIRST(&msgs);
        STAILQ_REMOVE_HEAD(&msgs, link);
        m->deliver(m, true);
    }
}

int mailbox_attach(struct mailbox *mb, struct event_base *base)
{
    event_assign(&mb->ev, base, mb->fd, EV_READ | EV_PERSIST, on_mail, mb);
    if (event_add(&mb->ev, NULL) < 0)
        return -1;
    mb->attached = true;
    return 0;
}

void mailbox_post(struct mailbox *mb, struct mailbox_list *msgs)
{
    uint64_t one = 1;
    bool was_empty;

    if (STAILQ_EMPTY(msgs))
        return;
    pthread_mutex_lock(&mb->lock);
    /* a non-empty mailbox has been signalled already and not yet emptied by its owner */
    was_empty = STAILQ_EMPTY(&mb->msgs);
    STAILQ_CONCAT(&mb->msgs, msgs);
    pthread_mutex_unlock(&mb->lock);
    if (was_empty && write(mb->fd, &one, sizeof(one)) < 0)
        log_debug("mailbox write: %d", errno);
}

void mailbox_post_one(struct mailbox *mb, struct mailbox_msg *m)
{
    struct mailbox_list one;

    STAILQ_INIT(&one);
    STAILQ_INSERT_TAIL(&one, m, link);
    mailbox_post(mb, &one);
}

void mailbox_release(struct mailbox *mb)
{
    if (mb->fd < 0)
        return;
    if (mb->attached)
        event_del(&mb->ev);
    mb->attached = false;
    close(mb->fd);
    mb->fd = -1;
    while (!STAILQ_EMPTY(&mb->msgs)) {
        struct mailbox_msg *m = STAILQ_FIRST(&mb->msgs);
        STAILQ_REMOVE_HEAD(&mb->msgs, link);
        m->deliver(m, false);
    }
    pthread_mutex_destroy(&mb->lock);
}
