// JSON, the readable-text rule and ValidationError live in WireFormat, below PatchCore, so
// patchd's transport can use them without the TUF code; every module that imports PatchCore
// sees them as before.
@_exported import WireFormat
