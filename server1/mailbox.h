/*
 * mailbox.h - a thread's inbox: other threads post messages, the owning thread's event loop
 * delivers them. One lock held for a list splice, one eventfd write per batch (none while the
 * owner has not taken the previous one yet).
 *
 * DESIGN: a message is embedded in the poster's own struct (a commit job, a handed-over
 * connection) and carries the function that handles it on the owner's thread, so the poster
 * needs to know nothing of the owner (the committer answers uploads without knowing workers or
 * handlers). After post, the message belongs to the owner. The model is server2's done queue.
 */
#ifndef S1_MAILBOX_H
#define S1_MAILBOX_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/queue.h>

#include <event2/event_struct.h>

struct mailbox_msg {
    /*
     * On the owner's thread: handles m (and may free what holds it). live is false when the
     * owner's loop has ended and the mailbox is being released: clean up only.
     */
    void (*deliver)(struct mailbox_msg *m, bool live);
    STAILQ_ENTRY(mailbox_msg) link;
};

STAILQ_HEAD(mailbox_list, mailbox_msg);

struct mailbox {
    int fd;               /* eventfd: posters write, the owner's loop reads */
    pthread_mutex_t lock; /* protects msgs */
    struct mailbox_list msgs;
    struct event ev;      /* the owner's */
    bool attached;
};

/* Returns -1 with errno if no eventfd can be made. */
int mailbox_init(struct mailbox *mb);
/* On the owner's thread: deliver on base's loop from now on. Returns -1 on failure. */
int mailbox_attach(struct mailbox *mb, struct event_base *base);
/* Any thread: hands every message of msgs to the owner (msgs is left empty); one wake-up. */
void mailbox_post(struct mailbox *mb, struct mailbox_list *msgs);
/* Any thread: one message. */
void mailbox_post_one(struct mailbox *mb, struct mailbox_msg *m);
/* After the owner's loop has ended: messages still in it are delivered with live = false. */
void mailbox_release(struct mailbox *mb);

#endif /* S1_MAILBOX_H */
