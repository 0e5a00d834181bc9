#ifndef HOTPATCH_CPROCESS_SHIM_H
#define HOTPATCH_CPROCESS_SHIM_H
// What starting the script check's worker needs beyond what Glibc's module shows Swift:
// posix_spawn_file_actions_addclosefrom_np (glibc 2.34) and pipe2, GNU extensions that the
// headers declare only under _GNU_SOURCE. Defining that here would give the system headers' types
// other definitions than the Glibc module's, so the two are declared as glibc has them.
// addclosefrom is what keeps every descriptor of patchd (listening sockets, clients, the registry file)
// out of the child.
#include <spawn.h>
#include <fcntl.h>

extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
extern int pipe2(int fds[2], int flags);

/// A pipe whose ends close on exec: only the ends dup'ed onto the child's 0, 1 and 2 reach it.
static inline int hp_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

static inline int hp_spawn_closefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
#endif
