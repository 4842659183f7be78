#pragma once
// Checkpoints in the safetensors format (huggingface/safetensors, README "Format"):
//   8 bytes: N, the header length, unsigned little-endian
//   N bytes: JSON {"__metadata__": {str: str}, name: {"dtype", "shape", "data_offsets"}}
//   the tensors' raw little-endian bytes, offsets relative to the end of the header
// float32 tensors are "F32"; bf16 and fp16 ones are kept as their 16-bit patterns ("BF16",
// "F16"). The metadata carries a checksum of the data bytes, verified on load, and the
// file is written atomically: temp file in the same folder, fsync, rename.
#include <cstdint>
#include <cstddef>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/runtime/typed_buffer.hpp"
#include "models/dtype.hpp"

namespace twinsim::exec {

// A file that cannot be written or read, or does not follow the format.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A well-formed file whose data no longer matches its stored checksum.
class CheckpointCorrupted : public CheckpointError {
 public:
  using CheckpointError::CheckpointError;
};

struct StoredTensor {
  Dtype dtype = Dtype::fp32;  // fp32, bf16 or fp16
  std::vector<std::int64_t> shape;
  std::vector<std::byte> data;  // little-endian element bytes
};

// The tensors and string metadata of one checkpoint file.
class TensorFile {
 public:
  void add_f32(const std::string& name, std::vector<std::int64_t> shape, const float* data);
  // dtype bf16 or fp16: 16-bit patterns
  void add_u16(const std::string& name, Dtype dtype, std::vector<std::int64_t> shape,
               const std::uint16_t* data);
  // Stored under the buffer's name.
  void add(const TypedBuffer& buffer);

  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  const StoredTensor& at(const std::string& name) const;  // throws CheckpointError
  std::vector<float> f32(const std::string& name) const;  // throws when not F32
  std::vector<std::uint16_t> u16(const std::string& name) const;  // throws when not 16-bit
  // Copies into a buffer of the same name; shape and dtype must match (CheckpointError).
  void copy_to(TypedBuffer& buffer) const;

  const std::map<std::string, StoredTensor>& tensors() const { return tensors_; }
  std::map<std::string, std::string>& metadata() { return metadata_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::map<std::string, StoredTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// The metadata key of the data checksum (FNV-1a 64-bit, 16 hex digits).
inline constexpr const char* kChecksumKey = "twinsim.checksum_fnv1a64";

void save_safetensors(const std::string& path, const TensorFile& file);

// Fault injection for tests: called after the temporary file is written and synced and
// before it is renamed over `path`, so a test can kill the job exactly there. Empty (the
// default) does nothing.
using CheckpointWriteHook = std::function<void(const std::string& tmp_path, const std::string& path)>;
void set_checkpoint_write_hook(CheckpointWriteHook hook);
// Throws CheckpointError (unreadable, malformed) or CheckpointCorrupted (checksum).
TensorFile load_safetensors(const std::string& path);

// FNV-1a 64-bit (Fowler, Noll, Vo; IETF draft-eastlake-fnv) over bytes, continuing from h.
std::uint64_t fnv1a64(const void* data, std::size_t bytes,
                      std::uint64_t h = 0xcbf29ce484222325ULL);

}  // namespace twinsim::exec
