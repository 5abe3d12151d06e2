// A stand-in for librccl.so.1 (SONAME and the exports the plugin looks for, nothing else): lets the
// conformance test see the plugin find RCCL in a process without AMD's library.
extern "C" {
__attribute__((visibility("default"))) int ncclGetVersion(int* version) {
  *version = 23102;  // RCCL 2.31.2
  return 0;
}
__attribute__((visibility("default"))) int mscclLoadAlgo() { return 0; }
__attribute__((visibility("default"))) int ncclAllToAllv() { return 0; }
}
