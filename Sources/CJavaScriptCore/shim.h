#ifndef HOTPATCH_CJAVASCRIPTCORE_SHIM_H
#define HOTPATCH_CJAVASCRIPTCORE_SHIM_H
// JavaScriptCore's C API, as WebKitGTK ships it (libjavascriptcoregtk-4.1-dev): the engine
// family iOS runs a JSPatch script in. Only patchcheck (the script check's worker) links it.
#include <JavaScriptCore/JavaScript.h>
#endif
