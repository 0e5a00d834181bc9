#ifndef HOTPATCH_CZIP_SHIM_H
#define HOTPATCH_CZIP_SHIM_H
#include <zip.h>
#endif
