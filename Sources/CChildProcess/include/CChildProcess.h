#ifndef HERALD_CCHILDPROCESS_H
#define HERALD_CCHILDPROCESS_H
#include <spawn.h>

/// Adds to `actions` the closing of every descriptor from `lowest` up, in the child before it runs
/// its program. Returns 0, or an error number (ENOSYS where the C library cannot).
int herald_spawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int lowest);

#endif
