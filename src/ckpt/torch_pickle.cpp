// read_torch_save(): torch.save's zip files, read by a restricted unpickler of our own. The zip
// (its directory and each record's place) is read by LibTorch's PyTorchStreamReader; every byte
// taken from the file is read here with pread(2) after its record's local header says it is
// there. The pickle machine knows the opcodes of protocols 2 to 4 that torch.save emits and the
// globals listed in global_kind(); anything else is refused, naming the file.
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ckpt/pickle_machine.hpp"
#include "cohort/ckpt/weights.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/unique_fd.hpp"
#include "common/checked_math.hpp"

namespace cohort::ckpt {
namespace {

constexpr std::uint64_t kMaxPickleBytes = 256ull << 20;
constexpr std::uint64_t kMaxVersionBytes = 64;  // torch.save writes "3\n"

std::uint32_t le32(const unsigned char* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
std::uint16_t le16(const unsigned char* p) {
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}
std::uint64_t le64(const unsigned char* p) {
  return le32(p) | (static_cast<std::uint64_t>(le32(p + 4)) << 32);
}

// One zip record's stored bytes: where they begin and how many there are, from its local header
// (found just before the data offset PyTorchStreamReader reports), checked against the file.
class TorchZip {
 public:
  explicit TorchZip(const std::string& path)
      : path_(path), fd_(UniqueFd::open_read_only(path)), size_(io::file_bytes(path)) {
    // The directory first: PyTorchStreamReader allocates a record's claimed size before it reads
    // it (its version record, at once), so every claim is checked against the file before.
    read_directory();
    try {
      reader_ = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
    } catch (const c10::Error& e) {
      COHORT_THROW(IoError, path, ": not a torch.save zip file (", e.what_without_backtrace(), ")");
    }
  }

  // The record's bytes [offset, offset + size), stored uncompressed inside the file.
  std::pair<std::uint64_t, std::uint64_t> span(const std::string& name) {
    std::uint64_t offset = 0;
    try {
      COHORT_CHECK(reader_->hasRecord(name), IoError, path_, ": no record ", name);
      offset = reader_->getRecordOffset(name);
    } catch (const c10::Error& e) {
      COHORT_THROW(IoError, path_, ": record ", name, ": ", e.what_without_backtrace());
    }
    const auto it = sizes_.find(name);
    COHORT_CHECK(it != sizes_.end(), IoError, path_, ": record ", name, " is not in the directory");
    COHORT_CHECK(it->second <= size_ && offset <= size_ - it->second, IoError, path_, ": record ",
                 name, " claims ", it->second, " bytes at ", offset, " in a file of ", size_);
    return {offset, it->second};
  }

  void read(std::uint64_t offset, std::uint64_t bytes, void* out) {
    io::read_at(fd_.get(), static_cast<std::int64_t>(offset), out, bytes, path_);
  }
  const std::string& path() const { return path_; }

 private:
  // The stored size of each record, from the zip's central directory (its local headers may
  // defer their sizes to data descriptors, as PyTorchStreamWriter's do), keyed by the name
  // below the archive's top folder ("data.pkl", "data/0").
  void read_directory() {
    const std::uint64_t tail = std::min<std::uint64_t>(size_, 22 + 65535 + 20);
    std::vector<unsigned char> end(tail);
    read(size_ - tail, tail, end.data());
    std::uint64_t at = tail;
    while (at >= 22 && le32(end.data() + at - 22) != 0x06054b50u) --at;
    COHORT_CHECK(at >= 22, IoError, path_,
                 ": not a torch.save zip file (no zip end-of-directory record)");
    const unsigned char* eocd = end.data() + at - 22;
    std::uint64_t offset = le32(eocd + 16), bytes = le32(eocd + 12);
    if (offset == 0xffffffffu && at >= 42 && le32(eocd - 20) == 0x07064b50u) {
      unsigned char record[56];  // zip64: the locator names the zip64 end-of-directory record
      const std::uint64_t where = le64(eocd - 20 + 8);
      COHORT_CHECK(where <= size_ - std::min<std::uint64_t>(size_, 56), IoError, path_,
                   ": a zip64 directory record past the end");
      read(where, 56, record);
      bytes = le64(record + 40);
      offset = le64(record + 48);
    }
    COHORT_CHECK(bytes <= size_ && offset <= size_ - bytes, IoError, path_, ": a zip directory of ",
                 bytes, " bytes at ", offset, " in a file of ", size_);
    std::vector<unsigned char> dir(bytes);
    read(offset, bytes, dir.data());
    for (std::uint64_t p = 0; p + 46 <= bytes;) {
      const unsigned char* e = dir.data() + p;
      COHORT_CHECK(le32(e) == 0x02014b50u, IoError, path_, ": a malformed zip directory");
      const std::uint64_t names = le16(e + 28), extra = le16(e + 30), comment = le16(e + 32);
      COHORT_CHECK(p + 46 + names + extra + comment <= bytes, IoError, path_,
                   ": a zip directory entry past its end");
      std::uint64_t stored = le32(e + 20), plain = le32(e + 24);
      if (stored == 0xffffffffu) stored = zip64_size(e + 46 + names, extra, le32(e + 24));
      if (plain == 0xffffffffu) plain = zip64_first(e + 46 + names, extra);
      const std::string name(reinterpret_cast<const char*>(e + 46), names);
      const auto slash = name.find('/');
      COHORT_CHECK(le16(e + 10) == 0, IoError, path_, ": record ", name,
                   " is compressed (torch.save stores records uncompressed)");
      // What LibTorch allocates for a record: its claim, held to what the file can hold (and a
      // version record, which it reads at once, to a few bytes).
      const bool version = name.size() >= 7 && name.compare(name.size() - 7, 7, "version") == 0;
      COHORT_CHECK(plain == stored && stored <= size_ && (!version || stored <= kMaxVersionBytes),
                   IoError, path_, ": record ", name, " claims ", plain, " bytes (", stored,
                   " stored) in a file of ", size_);
      if (slash != std::string::npos) sizes_[name.substr(slash + 1)] = stored;
      p += 46 + names + extra + comment;
    }
  }

  // Zip64's extra field's first value: the 64-bit uncompressed size (when the 32-bit one is
  // 0xffffffff).
  std::uint64_t zip64_first(const unsigned char* extra, std::uint64_t length) const {
    for (std::uint64_t at = 0; at + 4 <= length;) {
      const std::uint64_t id = le16(extra + at), bytes = le16(extra + at + 2);
      if (id == 0x0001 && at + 12 <= length && bytes >= 8) return le64(extra + at + 4);
      at += 4 + bytes;
    }
    COHORT_THROW(IoError, path_, ": a zip64 size without its extra field");
  }

  // Zip64's extra field: the 64-bit uncompressed size first when its 32-bit one is 0xffffffff,
  // then the compressed size.
  std::uint64_t zip64_size(const unsigned char* extra, std::uint64_t length,
                           std::uint32_t uncompressed) const {
    for (std::uint64_t at = 0; at + 4 <= length;) {
      const std::uint64_t id = le16(extra + at), bytes = le16(extra + at + 2);
      const std::uint64_t skip = uncompressed == 0xffffffffu ? 8 : 0;
      if (id == 0x0001 && at + 4 + skip + 8 <= length && bytes >= skip + 8) {
        return le64(extra + at + 4 + skip);
      }
      at += 4 + bytes;
    }
    COHORT_THROW(IoError, path_, ": a zip64 size without its extra field");
  }

  std::string path_;
  UniqueFd fd_;
  std::uint64_t size_ = 0;
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader_;
  std::map<std::string, std::uint64_t> sizes_;
};

// The dict of tensors a file holds: the top level, or its "state_dict" or "model" entry.
const pickle::Value& state_dict_of(const pickle::Value& top, const std::string& path) {
  COHORT_CHECK(top.kind == pickle::Kind::kDict, IoError, path, ": holds a ",
               pickle::kind_name(top.kind), ", not a dict of tensors (a state_dict)");
  for (const char* key : {"state_dict", "model"}) {
    if (const auto* inner = top.find(key); inner && inner->kind == pickle::Kind::kDict) {
      return *inner;
    }
  }
  return top;
}

}  // namespace

NamedWeights read_torch_save(const std::string& path) {
  TorchZip zip(path);
  const auto [offset, bytes] = zip.span("data.pkl");
  COHORT_CHECK(bytes <= kMaxPickleBytes, IoError, path, ": its pickle is ", bytes,
               " bytes (more than ", kMaxPickleBytes, ": not a state_dict)");
  std::string text(bytes, '\0');
  zip.read(offset, bytes, text.data());
  const auto storage = [&zip](const std::string& key, at::ScalarType dtype,
                              std::int64_t numel) -> at::Tensor {
    const auto [at, stored] = zip.span("data/" + key);
    const auto bytes = checked::mul(numel, static_cast<std::int64_t>(c10::elementSize(dtype)));
    COHORT_CHECK(bytes && static_cast<std::uint64_t>(*bytes) <= stored, IoError, zip.path(),
                 ": storage ", key, " holds ", stored, " bytes, its ", numel,
                 " elements need more");
    const auto need = static_cast<std::uint64_t>(*bytes);
    at::Tensor t = at::empty({numel}, at::TensorOptions().dtype(dtype));
    if (need > 0) zip.read(at, need, t.data_ptr());
    return t;
  };
  const pickle::Value top = pickle::run(text, path, storage);
  NamedWeights weights;
  weights.source = path;
  for (const auto& [key, value] : state_dict_of(top, path).entries) {
    COHORT_CHECK(key->kind == pickle::Kind::kString && value->kind == pickle::Kind::kTensor,
                 IoError, path, ": entry ",
                 key->kind == pickle::Kind::kString ? key->text : pickle::kind_name(key->kind),
                 " is a ", pickle::kind_name(value->kind), ", not a tensor");
    weights.tensors.emplace_back(key->text, value->tensor);
  }
  return weights;
}

}  // namespace cohort::ckpt
