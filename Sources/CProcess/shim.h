#ifndef HOTPATCH_CPROCESS_SHIM_H
#define HOTPATCH_CPROCESS_SHIM_H
// What starting the script check's worker needs beyond what Glibc's module shows Swift:
// posix_spawn_file_actions_addclosefrom_np is a GNU extension (glibc 2.34), declared only
// under _GNU_SOURCE, and it is what keeps every descriptor of patchd (listening sockets,
// clients, the registry file) out of the child.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <spawn.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

static inline int hp_spawn_closefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
#endif
