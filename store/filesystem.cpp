// Which file system holds the store: SQLite's WAL keeps its index in memory shared through mmap,
// which only processes of one host see, so on a network or cluster file system it must not run.
#include <sys/vfs.h>

#include <array>

#include "store/store_impl.h"

namespace dynamiccl::store {
namespace {

struct NetworkFs {
  uint32_t magic;  // statfs f_type (linux/magic.h and the vendors' own)
  const char* name;
};

// Every file system where processes on different hosts may open one file. FUSE is here too: the
// mounts a cluster uses it for (GlusterFS, sshfs, JuiceFS, s3fs) are remote, and statfs cannot tell.
constexpr std::array kNetworkFileSystems = {
    NetworkFs{0x00006969, "NFS"},       NetworkFs{0x0BD00BD0, "Lustre"},   NetworkFs{0x47504653, "GPFS"},
    NetworkFs{0x19830326, "BeeGFS"},    NetworkFs{0xFF534D42, "CIFS"},     NetworkFs{0xFE534D42, "SMB2/3"},
    NetworkFs{0x0000517B, "SMB"},       NetworkFs{0x00C36400, "CephFS"},   NetworkFs{0x65735546, "FUSE"},
    NetworkFs{0x01021997, "9p"},        NetworkFs{0x5346414F, "OpenAFS"},  NetworkFs{0x6B414653, "AFS"},
    NetworkFs{0x73757245, "Coda"},      NetworkFs{0x0000564C, "NCP"},      NetworkFs{0x7461636F, "OCFS2"},
    NetworkFs{0x01161970, "GFS2"},      NetworkFs{0xAAD7AAEA, "PanFS"},    NetworkFs{0x20030528, "OrangeFS"},
};

int64_t statfsType(const char* path) {
  struct statfs st {};
  return ::statfs(path, &st) == 0 ? static_cast<int64_t>(st.f_type) : -1;
}

}  // namespace

const char* networkFileSystemName(int64_t statfs_type) {
  for (const NetworkFs& fs : kNetworkFileSystems)
    if (static_cast<uint32_t>(statfs_type) == fs.magic) return fs.name;
  return nullptr;
}

const char* networkFileSystemOf(const std::string& path, const StoreOptions& options) {
  if (path.empty() || path == ":memory:") return nullptr;
  const int64_t type = (options.filesystem_type != nullptr ? options.filesystem_type : statfsType)(path.c_str());
  return type < 0 ? nullptr : networkFileSystemName(type);
}

}  // namespace dynamiccl::store
