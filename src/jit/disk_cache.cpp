// src/jit/disk_cache.cpp: content-addressed cubin cache, published by atomic rename
// SPDX-License-Identifier: Apache-2.0
#include "jit/disk_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "core/env.hpp"

namespace gemmops::jit {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::move(ss).str();
}

Status io_error(const fs::path& p, const char* what) {
  return internal_error("kernel cache: cannot " + std::string(what) + " " + p.string() + ": " +
                        std::strerror(errno));
}

// Durable write: the data reaches the disk before the directory holding it is renamed into place.
Status write_file(const fs::path& p, const std::string& data) {
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error(p, "create");
  const char* ptr = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, ptr, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = io_error(p, "write");
      ::close(fd);
      return s;
    }
    ptr += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    Status s = io_error(p, "fsync");
    ::close(fd);
    return s;
  }
  if (::close(fd) != 0) return io_error(p, "close");
  return Status::ok();
}

void fsync_dir(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

// Unique among processes (pid), threads (thread id) and calls (counter).
std::string unique_suffix() {
  static std::atomic<unsigned long> counter{0};
  const auto tid = std::hash<std::thread::id>{}(std::this_thread::get_id());
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%ld.%zx.%lu", static_cast<long>(::getpid()), tid, counter.fetch_add(1));
  return buf;
}

std::string safe_dir_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace

DiskCache DiskCache::from_env() { return DiskCache(env::cache_dir()); }

fs::path DiskCache::entry_dir(const CacheKey& key) const {
  return root_ / kLayoutVersion / safe_dir_name(key.kernel_name) / key.hash();
}

std::optional<CompiledKernel> DiskCache::load(const CacheKey& key) const {
  const fs::path dir = entry_dir(key);
  auto key_text = read_file(dir / "key.txt");
  if (!key_text || *key_text != key.to_string()) return std::nullopt;  // absent, partial or a collision
  auto cubin = read_file(dir / "kernel.cubin");
  auto names = read_file(dir / "names.txt");
  auto log = read_file(dir / "log.txt");
  if (!cubin || cubin->empty() || !names || !log) return std::nullopt;
  CompiledKernel k;
  std::istringstream in(*names);
  for (std::string line; std::getline(in, line);) k.lowered_names.push_back(line);
  if (k.lowered_names.size() != key.name_expressions.size()) return std::nullopt;
  k.cubin = std::move(*cubin);
  k.log = std::move(*log);
  k.key_text = std::move(*key_text);
  k.origin = "disk";
  return k;
}

Status DiskCache::store(const CacheKey& key, const CompiledKernel& kernel) const {
  const fs::path dir = entry_dir(key);
  const fs::path parent = dir.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) return internal_error("kernel cache: cannot create " + parent.string() + ": " + ec.message());
  const fs::path tmp = parent / (key.hash() + ".tmp." + unique_suffix());
  if (::mkdir(tmp.c_str(), 0755) != 0) return io_error(tmp, "create");
  auto fail = [&](Status s) {
    fs::remove_all(tmp, ec);
    return s;
  };
  if (Status s = write_file(tmp / "kernel.cu", key.source); !s) return fail(s);
  if (Status s = write_file(tmp / "kernel.cubin", kernel.cubin); !s) return fail(s);
  if (Status s = write_file(tmp / "names.txt", join_lines(kernel.lowered_names)); !s) return fail(s);
  if (Status s = write_file(tmp / "log.txt", kernel.log); !s) return fail(s);
  // key.txt last: an entry is valid only when it is present and equal to the key.
  if (Status s = write_file(tmp / "key.txt", key.to_string()); !s) return fail(s);
  fsync_dir(tmp);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (::rename(tmp.c_str(), dir.c_str()) == 0) {
      fsync_dir(parent);
      return Status::ok();
    }
    if (errno != EEXIST && errno != ENOTEMPTY) return fail(io_error(dir, "publish"));
    if (load(key)) return fail(Status::ok());  // another writer won the race with the same content
    // A corrupt entry is in the way: move it aside (atomic), then delete it at leisure.
    const fs::path trash = parent / (key.hash() + ".corrupt." + unique_suffix());
    if (::rename(dir.c_str(), trash.c_str()) == 0) fs::remove_all(trash, ec);
  }
  if (load(key)) return fail(Status::ok());
  return fail(internal_error("kernel cache: cannot replace the corrupt entry " + dir.string()));
}

}  // namespace gemmops::jit
