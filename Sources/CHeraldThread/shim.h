#ifndef HERALD_CTHREAD_SHIM_H
#define HERALD_CTHREAD_SHIM_H

// Names the calling OS thread. Glibc declares pthread_setname_np only under _GNU_SOURCE, which
// Swift's Glibc module is not built with; prctl(PR_SET_NAME) names the calling thread and needs no
// feature macro, but is variadic, so Swift cannot call it directly.
#include <sys/prctl.h>

static inline int herald_name_current_thread(const char *name) {
    // The kernel keeps at most 15 bytes and cuts the rest.
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

// The calling OS thread's name into `buffer` (at least 16 bytes).
static inline int herald_current_thread_name(char *buffer) {
    return prctl(PR_GET_NAME, (unsigned long)buffer, 0, 0, 0);
}

#endif
