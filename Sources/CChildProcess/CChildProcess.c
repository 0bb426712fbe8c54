// glibc declares posix_spawn_file_actions_addclosefrom_np (2.34 and later) only for _GNU_SOURCE /
// _DEFAULT_SOURCE builds, which Swift's view of the C library is not: this file is compiled with it.
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include "CChildProcess.h"

int herald_spawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int lowest) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
#else
    (void)actions;
    (void)lowest;
    return ENOSYS;
#endif
}
