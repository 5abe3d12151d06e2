// libcurl through dlopen: the few functions and option numbers used are declared here (libcurl's ABI
// keeps them stable), so building needs no curl headers and loading the plugin no libcurl.
#include "coord/http_client.h"

#include <dlfcn.h>

#include <mutex>

#include "coord/record_store.h"

namespace dynamiccl::coord {
namespace {

thread_local const std::atomic<bool>* tAbort = nullptr;  // AbortScope's flag on this thread

// curl.h's values (CURLOPTTYPE_LONG 0, OBJECTPOINT 10000, FUNCTIONPOINT 20000).
constexpr int kOptWriteData = 10001, kOptUrl = 10002, kOptProxy = 10004, kOptHttpHeader = 10023,
              kOptSslCert = 10025, kOptWriteFunction = 20011,
              kOptPostFields = 10015, kOptPostFieldSize = 60, kOptSslVerifyPeer = 64, kOptCaInfo = 10065,
              kOptSslVerifyHost = 81, kOptSslKey = 10087, kOptNoSignal = 99, kOptTimeoutMs = 155,
              kOptConnectTimeoutMs = 156, kOptNoProxy = 10177, kOptProtocols = 181;
constexpr int kInfoResponseCode = 0x200000 + 2;
constexpr int kTimedOutCode = 28;  // CURLE_OPERATION_TIMEDOUT
constexpr long kProtoHttp = 1, kProtoHttps = 2;
constexpr long kGlobalDefault = 3;
constexpr size_t kMaxReplyBytes = 4u << 20;  // a record is <= 1 MiB, base64 in JSON: well below
constexpr int kWaitSlice_ms = 10;  // how often a transfer looks at its thread's abort flag
// A thread with no abort flag waits on the socket in one go (curl ends the wait early for its own
// timeouts): 1,024 requests in flight, each waking every 10 ms, cost a 2-core machine most of a core
// that the store needed (measured on the bench's 1,024 ranks on one machine with etcd).
constexpr int kUnabortableSlice_ms = 1000;
constexpr int kMsgDone = 1;        // CURLMSG_DONE

struct MultiMessage {  // curl.h's CURLMsg
  int msg;
  void* easy;
  union {
    void* whatever;
    int result;
  } data;
};

struct Api {
  int (*globalInit)(long);
  void* (*easyInit)();
  int (*setopt)(void*, int, ...);
  int (*perform)(void*);
  int (*getinfo)(void*, int, ...);
  void (*cleanup)(void*);
  void (*reset)(void*);
  const char* (*strerror)(int);
  void* (*slistAppend)(void*, const char*);
  void (*slistFree)(void*);
  void* (*multiInit)();
  int (*multiAdd)(void*, void*);
  int (*multiRemove)(void*, void*);
  int (*multiPerform)(void*, int*);
  int (*multiWait)(void*, void*, unsigned, int, int*);
  MultiMessage* (*multiInfoRead)(void*, int*);
  void (*multiCleanup)(void*);
};

size_t collect(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  if (out->size() + size * n > kMaxReplyBytes) return 0;  // curl then fails the transfer
  out->append(data, size * n);
  return size * n;
}

class CurlClient : public HttpClient {
 public:
  explicit CurlClient(Api api) : api_(api) {}
  ~CurlClient() override {
    for (const Handle& h : idle_) {
      api_.cleanup(h.easy);
      api_.multiCleanup(h.multi);
    }
  }

  Expected<HttpReply> post(const std::string& url, const std::string& body, const std::vector<std::string>& headers,
                           const TlsFiles& tls, int timeout_ms) override {
    if (aborted()) return makeError("abandoned: the thread is stopping");
    const Handle handle = take();
    if (!handle.easy || !handle.multi) {
      if (handle.easy) api_.cleanup(handle.easy);
      if (handle.multi) api_.multiCleanup(handle.multi);
      return makeError("libcurl could not make a handle");
    }
    void* h = handle.easy;
    void* list = nullptr;
    for (const std::string& line : headers) list = api_.slistAppend(list, line.c_str());
    HttpReply reply;
    api_.setopt(h, kOptUrl, url.c_str());
    api_.setopt(h, kOptProtocols, kProtoHttp | kProtoHttps);
    api_.setopt(h, kOptProxy, "");     // never through a proxy the environment names
    api_.setopt(h, kOptNoProxy, "*");
    api_.setopt(h, kOptNoSignal, 1L);  // no SIGALRM in NCCL's process for timeouts
    api_.setopt(h, kOptTimeoutMs, static_cast<long>(timeout_ms));
    api_.setopt(h, kOptConnectTimeoutMs, static_cast<long>(timeout_ms));
    // The total bound alone cuts a peer that trickles bytes: a low-speed cut-off of a second also cut a
    // loaded etcd queueing the request (no byte yet), so 1,024 ranks' joins retried for 60 s and none agreed.
    api_.setopt(h, kOptPostFields, body.data());
    api_.setopt(h, kOptPostFieldSize, static_cast<long>(body.size()));
    api_.setopt(h, kOptHttpHeader, list);
    api_.setopt(h, kOptWriteFunction, &collect);
    api_.setopt(h, kOptWriteData, &reply.body);
    api_.setopt(h, kOptSslVerifyPeer, 1L);
    api_.setopt(h, kOptSslVerifyHost, 2L);
    if (!tls.caFile.empty()) api_.setopt(h, kOptCaInfo, tls.caFile.c_str());
    if (!tls.certFile.empty()) api_.setopt(h, kOptSslCert, tls.certFile.c_str());
    if (!tls.keyFile.empty()) api_.setopt(h, kOptSslKey, tls.keyFile.c_str());
    const int rc = perform(handle);
    api_.getinfo(h, kInfoResponseCode, &reply.status);
    api_.slistFree(list);
    give(handle);
    if (rc == kAborted) return makeError("abandoned: the thread is stopping");
    if (rc == kTimedOutCode) return makeError(std::string(kTimedOut) + " (" + api_.strerror(rc) + ")");
    if (rc != 0) return makeError(std::string(api_.strerror(rc)));
    return reply;
  }

 private:
  // An easy handle driven by a multi handle of its own, which keeps its connections between requests.
  struct Handle {
    void* easy = nullptr;
    void* multi = nullptr;
  };
  static constexpr int kAborted = -1;

  static bool aborted() { return tAbort && tAbort->load(std::memory_order_relaxed); }

  // curl_easy_perform in slices, so that the thread's abort flag is seen within one: the transfer's
  // result code, or kAborted.
  int perform(const Handle& h) {
    if (api_.multiAdd(h.multi, h.easy) != 0) return api_.perform(h.easy);
    int result = kAborted;
    for (int running = 1; running;) {
      if (api_.multiPerform(h.multi, &running) != 0) {
        result = 2;  // CURLE_FAILED_INIT: the multi handle broke
        break;
      }
      if (int left = 0; MultiMessage* m = api_.multiInfoRead(h.multi, &left))
        if (m->msg == kMsgDone) {
          result = m->data.result;
          break;
        }
      if (aborted()) break;
      if (running && api_.multiWait(h.multi, nullptr, 0, tAbort ? kWaitSlice_ms : kUnabortableSlice_ms, nullptr) != 0) {
        result = 2;
        break;
      }
    }
    api_.multiRemove(h.multi, h.easy);
    return result == kAborted && !aborted() ? 2 : result;
  }

  Handle take() {
    {
      std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        const Handle h = idle_.back();
        idle_.pop_back();
        return h;
      }
    }
    return Handle{api_.easyInit(), api_.multiInit()};
  }
  void give(const Handle& h) {
    api_.reset(h.easy);  // options cleared, the connection kept (in the multi handle) for the next request
    std::lock_guard lock(mutex_);
    idle_.push_back(h);
  }

  Api api_;
  std::mutex mutex_;
  std::vector<Handle> idle_;
};

template <typename F>
bool bind(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  return out != nullptr;
}

}  // namespace

Expected<std::shared_ptr<HttpClient>> HttpClient::load(const char* library) {
  static std::mutex mutex;
  static std::shared_ptr<HttpClient> loaded;  // one per process: libcurl's global init is not reentrant
  static std::string loadedFrom;
  std::lock_guard lock(mutex);
  if (loaded && loadedFrom == library) return loaded;
  void* lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    return makeError(std::string("cannot load ") + library + " (" + (why ? why : "?") + ")");
  }
  Api api{};
  if (!bind(lib, "curl_global_init", api.globalInit) || !bind(lib, "curl_easy_init", api.easyInit) ||
      !bind(lib, "curl_easy_setopt", api.setopt) || !bind(lib, "curl_easy_perform", api.perform) ||
      !bind(lib, "curl_easy_getinfo", api.getinfo) || !bind(lib, "curl_easy_cleanup", api.cleanup) ||
      !bind(lib, "curl_easy_reset", api.reset) || !bind(lib, "curl_easy_strerror", api.strerror) ||
      !bind(lib, "curl_slist_append", api.slistAppend) || !bind(lib, "curl_slist_free_all", api.slistFree) ||
      !bind(lib, "curl_multi_init", api.multiInit) || !bind(lib, "curl_multi_add_handle", api.multiAdd) ||
      !bind(lib, "curl_multi_remove_handle", api.multiRemove) || !bind(lib, "curl_multi_perform", api.multiPerform) ||
      !bind(lib, "curl_multi_wait", api.multiWait) || !bind(lib, "curl_multi_info_read", api.multiInfoRead) ||
      !bind(lib, "curl_multi_cleanup", api.multiCleanup)) {
    dlclose(lib);
    return makeError(std::string(library) + " lacks a libcurl function");
  }
  if (api.globalInit(kGlobalDefault) != 0) return makeError(std::string(library) + ": curl_global_init failed");
  loaded = std::make_shared<CurlClient>(api);  // the library stays loaded for the process
  loadedFrom = library;
  return loaded;
}

AbortScope::AbortScope(const std::atomic<bool>* flag) : previous_(tAbort) { tAbort = flag; }
AbortScope::~AbortScope() { tAbort = previous_; }

}  // namespace dynamiccl::coord
