#ifndef HERALD_CLIBPQ_SHIM_H
#define HERALD_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#include <poll.h>
#endif
