#ifndef HOTPATCH_CPOSTGRES_SHIM_H
#define HOTPATCH_CPOSTGRES_SHIM_H
// libpq, the PostgreSQL client library (Debian: libpq-dev; pkg-config adds
// -I/usr/include/postgresql).
#include <libpq-fe.h>
// poll(2), which waits on PQsocket for notifications.
#include <poll.h>

// The PG_DIAG_* field codes are character-literal macros, which Swift does not import.
static const int hp_pg_diag_sqlstate = PG_DIAG_SQLSTATE;
static const int hp_pg_diag_message_primary = PG_DIAG_MESSAGE_PRIMARY;
static const int hp_pg_diag_message_detail = PG_DIAG_MESSAGE_DETAIL;
#endif
