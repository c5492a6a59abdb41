/* Least privilege: what ibgwd gives up once it has opened what needs privileges.
 *
 * Start-up (port, IB devices, listeners, the stats socket) runs as started, normally root. Then
 * gw_privs_drop() switches to [gateway] user/group when set and, in every thread, drops the
 * capabilities (effective, permitted, inheritable, ambient, bounding set) to the few the control
 * thread still needs, and sets no_new_privs. See privs.c for what is kept and why. */
#ifndef GW_PRIVS_H
#define GW_PRIVS_H

#include <stddef.h>

struct conf;

/* Before the EAL starts (no thread but the caller exists yet): resolves [gateway] user and group into
 * ids and supplementary groups (so that no name lookup happens once threads run), and unless
 * CHECK_ONLY raises RLIMIT_MEMLOCK so that IB memory registration needs no CAP_IPC_LOCK later.
 * Returns 0, or -errno with a message in ERR (e.g. an unknown user). */
int gw_privs_prepare(const struct conf *c, int check_only, char *err, size_t len);

/* Control thread, after everything that needs privileges is open and before the workers run (their
 * lcore threads exist and wait): switches user and group if configured, drops every thread's
 * capabilities but those the control thread keeps, sets no_new_privs on every thread, checks the
 * result in /proc/self/task/<tid>/status for each thread and logs one line saying what was kept.
 * Returns 0 or -errno (logged); on failure the daemon must not serve. */
int gw_privs_drop(const struct conf *c);

#endif
