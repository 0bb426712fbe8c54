#define _GNU_SOURCE
#include "CSignalIO.h"
#include <errno.h>

#if defined(__linux__)
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

// SIGRTMIN itself and the two above it are the ones other libraries pick first.
#define HERALD_SIGNAL_IO_OFFSET 5

int herald_signal_io_number(void) { return SIGRTMIN + HERALD_SIGNAL_IO_OFFSET; }

int herald_signal_io_thread(void) { return (int)syscall(SYS_gettid); }

static void herald_signal_io_set(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, herald_signal_io_number());
    sigaddset(set, SIGIO);
}

int herald_signal_io_block(void) {
    sigset_t set;
    herald_signal_io_set(&set);
    return pthread_sigmask(SIG_BLOCK, &set, NULL);
}

int herald_signal_io_descriptor(void) {
    sigset_t set;
    herald_signal_io_set(&set);
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int herald_signal_io_watch(int fd, int thread) {
    struct f_owner_ex owner = {.type = F_OWNER_TID, .pid = thread};
    if (fcntl(fd, F_SETOWN_EX, &owner) == -1) return errno;
    if (fcntl(fd, F_SETSIG, herald_signal_io_number()) == -1) return errno;
    int flags = fcntl(fd, F_GETFL);
    if (flags == -1 || fcntl(fd, F_SETFL, flags | O_ASYNC | O_NONBLOCK) == -1) return errno;
    return 0;
}

int herald_signal_io_unwatch(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags == -1 || fcntl(fd, F_SETFL, flags & ~O_ASYNC) == -1) return errno;
    return 0;
}

int herald_signal_io_record_size(void) { return (int)sizeof(struct signalfd_siginfo); }

#else

int herald_signal_io_number(void) { return -1; }
int herald_signal_io_thread(void) { return -1; }
int herald_signal_io_block(void) { return ENOSYS; }
int herald_signal_io_descriptor(void) { errno = ENOSYS; return -1; }
int herald_signal_io_watch(int fd, int thread) { (void)fd; (void)thread; return ENOSYS; }
int herald_signal_io_unwatch(int fd) { (void)fd; return ENOSYS; }
int herald_signal_io_record_size(void) { return 128; }

#endif
