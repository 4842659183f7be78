#include "exec/runtime/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace twinsim::exec {

// safetensors stores little-endian data; we copy host memory as is
static_assert(std::endian::native == std::endian::little, "checkpoint I/O assumes a little-endian host");

namespace {

// The reference implementation refuses headers above 100 MB (safetensors/src/tensor.rs,
// MAX_HEADER_SIZE); a larger length is a corrupted file, not a real header.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

const char* dtype_tag(Dtype d) {
  switch (d) {
    case Dtype::fp32: return "F32";
    case Dtype::bf16: return "BF16";
    case Dtype::fp16: return "F16";
    default: throw CheckpointError("dtype " + std::string(to_string(d)) + ": checkpoints hold fp32, bf16 or fp16");
  }
}

bool parse_dtype_tag(const std::string& tag, Dtype& out) {
  if (tag == "F32") out = Dtype::fp32;
  else if (tag == "BF16") out = Dtype::bf16;
  else if (tag == "F16") out = Dtype::fp16;
  else return false;
  return true;
}

std::size_t element_count(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (std::int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

std::string hex64(std::uint64_t v) {
  char s[17];
  std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(v));
  return s;
}

StoredTensor make_tensor(Dtype dtype, std::vector<std::int64_t> shape, const void* data) {
  for (std::int64_t d : shape)
    if (d < 0) throw CheckpointError("negative dimension " + std::to_string(d) + " in a tensor shape");
  StoredTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data.resize(element_count(t.shape) * storage_bytes(dtype));
  if (!t.data.empty()) std::memcpy(t.data.data(), data, t.data.size());
  return t;
}

// Writes all of `bytes` to fd or throws naming the file.
void write_all(int fd, const void* bytes, std::size_t n, const std::string& path) {
  const auto* p = static_cast<const char*>(bytes);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw CheckpointError("checkpoint '" + path + "': write failed: " + std::strerror(errno));
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

// Makes the rename itself durable (POSIX: a directory entry is persisted by fsync on the
// directory).
void sync_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // best effort: the data itself is already synced
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void TensorFile::add_f32(const std::string& name, std::vector<std::int64_t> shape, const float* data) {
  tensors_[name] = make_tensor(Dtype::fp32, std::move(shape), data);
}

void TensorFile::add_u16(const std::string& name, Dtype dtype, std::vector<std::int64_t> shape,
                         const std::uint16_t* data) {
  if (dtype != Dtype::bf16 && dtype != Dtype::fp16)
    throw CheckpointError("tensor '" + name + "': 16-bit storage is bf16 or fp16, not " + std::string(to_string(dtype)));
  tensors_[name] = make_tensor(dtype, std::move(shape), data);
}

void TensorFile::add(const TypedBuffer& buffer) {
  tensors_[buffer.name()] = make_tensor(buffer.dtype(), buffer.shape(), buffer.raw());
}

const StoredTensor& TensorFile::at(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) throw CheckpointError("checkpoint has no tensor '" + name + "'");
  return it->second;
}

std::vector<float> TensorFile::f32(const std::string& name) const {
  const StoredTensor& t = at(name);
  if (t.dtype != Dtype::fp32)
    throw CheckpointError("tensor '" + name + "' is " + dtype_tag(t.dtype) + ", not F32");
  std::vector<float> out(t.data.size() / sizeof(float));
  if (!out.empty()) std::memcpy(out.data(), t.data.data(), t.data.size());
  return out;
}

std::vector<std::uint16_t> TensorFile::u16(const std::string& name) const {
  const StoredTensor& t = at(name);
  if (t.dtype == Dtype::fp32) throw CheckpointError("tensor '" + name + "' is F32, not a 16-bit type");
  std::vector<std::uint16_t> out(t.data.size() / sizeof(std::uint16_t));
  if (!out.empty()) std::memcpy(out.data(), t.data.data(), t.data.size());
  return out;
}

void TensorFile::copy_to(TypedBuffer& buffer) const {
  const StoredTensor& t = at(buffer.name());
  if (t.dtype != buffer.dtype() || t.shape != buffer.shape())
    throw CheckpointError("tensor '" + buffer.name() + "': checkpoint holds " + dtype_tag(t.dtype) +
                          " " + nlohmann::json(t.shape).dump() + ", the buffer is " +
                          dtype_tag(buffer.dtype()) + " " + nlohmann::json(buffer.shape()).dump());
  if (!t.data.empty()) std::memcpy(buffer.raw(), t.data.data(), t.data.size());
}

std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t h) {
  // FNV-1a: xor the byte in, then multiply by the 64-bit FNV prime 2^40 + 2^8 + 0xb3
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

namespace {
CheckpointWriteHook& write_hook() {
  static CheckpointWriteHook hook;
  return hook;
}
}  // namespace

void set_checkpoint_write_hook(CheckpointWriteHook hook) { write_hook() = std::move(hook); }

void save_safetensors(const std::string& path, const TensorFile& file) {
  // header: tensors in name order, their data back to back in the same order
  nlohmann::json header = nlohmann::json::object();
  std::uint64_t offset = 0;
  std::uint64_t checksum = fnv1a64(nullptr, 0);
  for (const auto& [name, t] : file.tensors()) {
    if (name == "__metadata__") throw CheckpointError("a tensor may not be named __metadata__");
    header[name] = {{"dtype", dtype_tag(t.dtype)}, {"shape", t.shape},
                    {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
    checksum = fnv1a64(t.data.data(), t.data.size(), checksum);
  }
  nlohmann::json metadata = file.metadata();
  metadata[kChecksumKey] = hex64(checksum);
  header["__metadata__"] = metadata;
  std::string text = header.dump();
  // the reference writer pads the header with spaces so the data starts 8-byte aligned
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::uint64_t header_len = text.size();

  // write to a temporary file beside the target, sync, then rename over it: a reader
  // sees the old file or the new one, never a half-written one (rename(2) is atomic)
  const std::filesystem::path target(path);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw CheckpointError("checkpoint '" + path + "': cannot create " + tmp + ": " + std::strerror(errno));
  try {
    write_all(fd, &header_len, sizeof header_len, path);
    write_all(fd, text.data(), text.size(), path);
    for (const auto& [name, t] : file.tensors()) write_all(fd, t.data.data(), t.data.size(), path);
    if (::fsync(fd) != 0) throw CheckpointError("checkpoint '" + path + "': fsync failed: " + std::strerror(errno));
  } catch (...) {
    ::close(fd);
    std::remove(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (write_hook()) write_hook()(tmp, path);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw CheckpointError("checkpoint '" + path + "': rename from " + tmp + " failed: " + why);
  }
  sync_directory(target.parent_path());
}

namespace {

std::vector<char> read_file(const std::string& path) {
  // a folder opens as a stream whose size reads as 2^63: refused by name, not a bad_alloc
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (!error && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw CheckpointError("checkpoint '" + path + "': is not a regular file (a folder, device or pipe)");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw CheckpointError("checkpoint '" + path + "': cannot open");
  const std::streamoff end = in.tellg();
  if (end < 0) throw CheckpointError("checkpoint '" + path + "': its size cannot be read");
  const auto size = static_cast<std::size_t>(end);
  std::vector<char> bytes(size);
  in.seekg(0);
  if (size > 0 && !in.read(bytes.data(), static_cast<std::streamsize>(size)))
    throw CheckpointError("checkpoint '" + path + "': read failed");
  return bytes;
}

// One header entry, checked against the data section of `data_bytes` bytes.
StoredTensor read_entry(const std::string& path, const std::string& name, const nlohmann::json& e,
                        const char* data, std::uint64_t data_bytes) {
  const auto bad = [&](const std::string& why) {
    return CheckpointError("checkpoint '" + path + "': tensor '" + name + "': " + why);
  };
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
    throw bad("needs dtype, shape and data_offsets");
  StoredTensor t;
  if (!e["dtype"].is_string() || !parse_dtype_tag(e["dtype"].get<std::string>(), t.dtype))
    throw bad("dtype " + e["dtype"].dump() + " is not F32, BF16 or F16");
  for (const auto& d : e["shape"]) {
    if (!d.is_number_integer() || d.get<std::int64_t>() < 0) throw bad("shape " + e["shape"].dump() + " is not a list of sizes");
    t.shape.push_back(d.get<std::int64_t>());
  }
  const auto& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    throw bad("data_offsets " + off.dump() + " is not [begin, end]");
  const auto begin = off[0].get<std::uint64_t>();
  const auto end = off[1].get<std::uint64_t>();
  const std::uint64_t expected = element_count(t.shape) * storage_bytes(t.dtype);
  if (end < begin || end > data_bytes || end - begin != expected)
    throw bad("data_offsets " + off.dump() + " do not hold " + std::to_string(expected) +
              " bytes inside a data section of " + std::to_string(data_bytes));
  t.data.resize(expected);
  if (expected > 0) std::memcpy(t.data.data(), data + begin, expected);
  return t;
}

}  // namespace

TensorFile load_safetensors(const std::string& path) {
  const std::vector<char> bytes = read_file(path);
  if (bytes.size() < 8)
    throw CheckpointError("checkpoint '" + path + "': " + std::to_string(bytes.size()) +
                          " bytes, too short for the 8-byte header length");
  std::uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  if (header_len > kMaxHeaderBytes || header_len > bytes.size() - 8)
    throw CheckpointError("checkpoint '" + path + "': header length " + std::to_string(header_len) +
                          " exceeds the file (" + std::to_string(bytes.size()) + " bytes) or 100 MB");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(header_len));
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError("checkpoint '" + path + "': header is not JSON: " + e.what());
  }
  if (!header.is_object()) throw CheckpointError("checkpoint '" + path + "': header is not a JSON object");

  const char* data = bytes.data() + 8 + header_len;
  const std::uint64_t data_bytes = bytes.size() - 8 - header_len;
  TensorFile file;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) throw CheckpointError("checkpoint '" + path + "': __metadata__." + k + " is not a string");
        file.metadata()[k] = v.get<std::string>();
      }
      continue;
    }
    const StoredTensor t = read_entry(path, name, entry, data, data_bytes);
    if (t.dtype == Dtype::fp32) file.add_f32(name, t.shape, reinterpret_cast<const float*>(t.data.data()));
    else file.add_u16(name, t.dtype, t.shape, reinterpret_cast<const std::uint16_t*>(t.data.data()));
  }

  // the checksum covers the whole data section as written
  const auto stored = file.metadata().find(kChecksumKey);
  if (stored == file.metadata().end())
    throw CheckpointError("checkpoint '" + path + "': no " + kChecksumKey + " in __metadata__");
  const std::uint64_t actual = fnv1a64(data, data_bytes);
  if (stored->second != hex64(actual))
    throw CheckpointCorrupted("checkpoint '" + path + "': data checksum " + hex64(actual) +
                              " does not match the stored " + stored->second + " (file corrupted)");
  file.metadata().erase(kChecksumKey);
  return file;
}

}  // namespace twinsim::exec
