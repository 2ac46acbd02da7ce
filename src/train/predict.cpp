#include "cohort/train/predict.hpp"

#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <torch/autograd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <thread>

#include "cohort/comm/factory.hpp"
#include "cohort/comm/mpi_session.hpp"
#include "cohort/error.hpp"
#include "cohort/io/dtype.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/output.hpp"
#include "cohort/io/unique_fd.hpp"
#include "cohort/settings/config_paths.hpp"
#include "io/h5/file.hpp"
#include "io/h5/h5_check.hpp"
#include "models/task.hpp"
#include "train/inference.hpp"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;
namespace h5 = io::h5;

// Where each rank writes in the temporary "<out>.tmp-<pid of rank 0>": the byte offsets of /outputs
// and /argmax (-1: none).
struct OutputLayout {
  std::int64_t outputs = -1, argmax = -1;
  std::int64_t output_row_bytes = 0, argmax_row_bytes = 0;
};

// Rank 0: the file with every dataset allocated (not written), and its attributes.
OutputLayout create_output(io::TemporaryFile& temporary, const PredictSummary& s,
                           const std::vector<std::int64_t>& argmax_shape, const std::string& data) {
  const std::string& partial = temporary.path();
  h5::Hid file = h5::create_new_file(partial);
  temporary.adopt();
  OutputLayout layout;
  if (s.task != "language_model") {
    h5::Hid outputs = h5::create_preallocated_dataset(file.get(), "outputs", io::DType::kFloat32,
                                                      s.samples, s.output_shape, partial);
    layout.outputs = h5::data_offset(outputs.get(), partial);
  }
  if (s.argmax) {
    h5::Hid argmax = h5::create_preallocated_dataset(file.get(), "argmax", io::DType::kInt64,
                                                     s.samples, argmax_shape, partial);
    layout.argmax = h5::data_offset(argmax.get(), partial);
  }
  h5::write_attribute(file.get(), "format", std::string("cohort-predictions"), partial);
  h5::write_attribute(file.get(), "format_version", std::int64_t{1}, partial);
  h5::write_attribute(file.get(), "model", s.model, partial);
  h5::write_attribute(file.get(), "dataset", data, partial);
  h5::write_attribute(file.get(), "task", s.task, partial);
  return layout;
}

void write_at(int fd, const at::Tensor& rows, std::int64_t offset, const std::string& path) {
  const auto* bytes = static_cast<const char*>(rows.data_ptr());
  std::size_t left = rows.numel() * rows.element_size();
  while (left > 0) {
    const ssize_t n = ::pwrite(fd, bytes, left, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    COHORT_CHECK(n > 0, IoError, path, ": cannot write predictions: ", std::strerror(errno));
    bytes += n;
    offset += n;
    left -= static_cast<std::size_t>(n);
  }
}

// This rank's rows [first, last), batch by batch, at their places in the file; then fsync.
void write_share(Inference& runner, const PredictOptions& o, const OutputLayout& layout,
                 const std::string& partial, std::int64_t first, std::int64_t last, bool argmax) {
  UniqueFd fd(::open(partial.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
  COHORT_CHECK(fd.get() >= 0, IoError, partial, ": cannot open: ", std::strerror(errno));
  torch::NoGradGuard no_grad;
  for (std::int64_t begin = first; begin < last; begin += o.batch_size) {
    const std::int64_t count = std::min(o.batch_size, last - begin);
    const at::Tensor out = runner.run(begin, count).outputs;
    if (layout.outputs >= 0) {
      write_at(fd.get(), out, layout.outputs + begin * layout.output_row_bytes, partial);
    }
    if (argmax) {
      write_at(fd.get(), out.argmax(-1).contiguous(),
               layout.argmax + begin * layout.argmax_row_bytes, partial);
    }
    if (o.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.delay_ms));
  }
  COHORT_CHECK(::fsync(fd.get()) == 0, IoError, partial, ": fsync: ", std::strerror(errno));
}

// Collective: rank 0 creates the temporary "<out>.tmp-<pid>" (exclusively: io::TemporaryFile) and
// broadcasts its pid and where its datasets lie; every rank writes its contiguous share of the
// samples; once all have synced, rank 0 renames it to `out`.
void write_predictions(Inference& runner, const PredictOptions& o, const PredictSummary& s,
                       const std::vector<std::int64_t>& argmax_shape,
                       const comm::MpiSession& session) {
  auto comm = comm::make_communicator(session, comm::Backend::kMpi, {});
  std::optional<io::TemporaryFile> temporary;
  OutputLayout layout;
  at::Tensor offsets = at::full({4}, -1, at::kLong);  // outputs, argmax, pid (-1: failed), serial
  std::exception_ptr failure;  // rank 0's, rethrown after the broadcast: no rank waits for it
  if (session.rank() == 0) {
    try {
      temporary.emplace(o.out);
      layout = create_output(*temporary, s, argmax_shape, o.data);
      offsets[0] = layout.outputs;
      offsets[1] = layout.argmax;
      offsets[2] = static_cast<std::int64_t>(::getpid());
      offsets[3] = temporary->serial();
    } catch (...) {  // rethrown below, once every rank has the verdict
      failure = std::current_exception();
    }
  }
  comm->broadcast_async(offsets, 0)->wait();
  if (failure) std::rethrow_exception(failure);
  COHORT_CHECK(offsets[2].item<std::int64_t>() >= 0, IoError, o.out,
               ": rank 0 could not create the output (its error says why)");
  layout.outputs = offsets[0].item<std::int64_t>();
  layout.argmax = offsets[1].item<std::int64_t>();
  const std::string partial =
      io::TemporaryFile::name_for(o.out, static_cast<long>(offsets[2].item<std::int64_t>()),
                                  static_cast<int>(offsets[3].item<std::int64_t>()));
  layout.output_row_bytes =
      io::shape_numel(s.output_shape) * static_cast<std::int64_t>(sizeof(float));
  layout.argmax_row_bytes =
      io::shape_numel(argmax_shape) * static_cast<std::int64_t>(sizeof(std::int64_t));
  const std::int64_t n = s.samples, rank = session.rank(), world = session.size();
  write_share(runner, o, layout, partial, n * rank / world, n * (rank + 1) / world, s.argmax);
  at::Tensor synced = at::ones({1}, at::kLong);
  comm->all_reduce(synced);  // every rank's rows are on disk
  if (temporary) temporary->commit();
}

}  // namespace

PredictSummary predict(const PredictOptions& o, const comm::MpiSession& session) {
  const auto start = std::chrono::steady_clock::now();
  COHORT_CHECK(o.batch_size >= 1, UsageError, "predict: --batch-size must be >= 1");
  Inference inference(o.model, o.data);  // reads only: the output is checked before any write
  io::OutputPlan plan;
  plan.read(o.data, "--data")
      .read(o.model.checkpoint, "--checkpoint")
      .read(o.model.model_file, "--model")
      .read(inference.config_file(), "the run's config");
  add_inputs(inference.config(), plan);  // the run's dataset, module, transform, weights
  plan.write(o.out, "--out").check();
  const Task& task = inference.task();
  PredictSummary s;
  s.out = o.out;
  s.model = inference.label();
  s.task = to_string(task.kind());
  s.samples = inference.info().num_samples;
  s.ranks = session.size();
  COHORT_CHECK(s.samples >= 1, IoError, o.data, ": no samples to predict");
  const auto shape = inference.run(0, 1).outputs.sizes().vec();  // every rank: the same shape
  s.output_shape.assign(shape.begin() + 1, shape.end());
  task.check_output(s.output_shape);
  s.argmax = task.kind() == TaskKind::kClassification || task.kind() == TaskKind::kLanguageModel;
  const std::vector<std::int64_t> argmax_shape(shape.begin() + 1, shape.end() - 1);
  if (task.kind() == TaskKind::kLanguageModel) s.output_shape.clear();  // argmax only
  write_predictions(inference, o, s, argmax_shape, session);
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

}  // namespace cohort::train
