#ifndef HERALD_CSIGNALIO_H
#define HERALD_CSIGNALIO_H

/// Linux's signal-driven I/O, for watching a socket that another library reads (libpq's) from an
/// event loop that can only watch descriptors it reads itself: the kernel queues a real-time signal
/// to one thread when the socket becomes readable or writable, and a `signalfd` turns the signals
/// queued for that thread into records the loop can read. See fcntl(2) (F_SETSIG, F_SETOWN_EX) and
/// signalfd(2). Elsewhere every function fails with ENOSYS.

/// The real-time signal used for socket readiness.
int herald_signal_io_number(void);

/// The calling thread's kernel id.
int herald_signal_io_thread(void);

/// Blocks the readiness signal and SIGIO (sent instead when the real-time queue overflows) on the
/// calling thread, so that they wait for its signalfd instead of ending the process. 0 or an errno.
int herald_signal_io_block(void);

/// A non-blocking, close-on-exec signalfd for the readiness signal and SIGIO; -1 with errno set.
int herald_signal_io_descriptor(void);

/// Makes `fd` queue the readiness signal to thread `thread` whenever it becomes readable or
/// writable. 0 or an errno.
int herald_signal_io_watch(int fd, int thread);

/// Stops signals for `fd`. 0 or an errno.
int herald_signal_io_unwatch(int fd);

/// The size of one signalfd record (a read must have room for one).
int herald_signal_io_record_size(void);

#endif
