#ifndef HOTPATCH_CLIBFUZZER_SHIM_H
#define HOTPATCH_CLIBFUZZER_SHIM_H
// libFuzzer's driver, linked in by `-sanitize=fuzzer` (compiler-rt's libclang_rt.fuzzer).
// Harnesses call it from their own main: SwiftPM renames an executable's entry point and
// links `main` to it, so libFuzzer's own main cannot be the one that runs.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
